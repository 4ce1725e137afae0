"""Specification of ``acframe.registry``: registering, lazy entries, lookup errors and import_names."""
import sys
import textwrap

import pytest

from acframe.errors import RegistryError
from acframe.registry import ENV_REGISTRY, POLICY_REGISTRY, Registry, import_names


def test_register_decorator_returns_the_class_and_get_finds_it():
    registry = Registry('thing')

    @registry.register('square')
    class Square:
        pass

    assert registry.get('square') is Square
    assert 'square' in registry
    assert registry.names() == ['square']
    assert Square.registered_name == 'square'
    assert isinstance(registry.build('square'), Square)


def test_register_without_decorator_and_build_passes_arguments():
    registry = Registry('factory')
    registry.register('pair', lambda a, b=0: (a, b))
    assert registry.build('pair', 1, b=2) == (1, 2)


def test_registering_another_object_under_a_taken_name_is_an_error_unless_forced():
    registry = Registry('thing')

    class First:
        pass

    class Second:
        pass

    registry.register('x', First)
    registry.register('x', First)  # the same object again (a re-imported module) is fine
    with pytest.raises(RegistryError, match="already registered"):
        registry.register('x', Second)
    registry.register('x', Second, force=True)
    assert registry.get('x') is Second


def _write_module(folder, name, body):
    (folder / f'{name}.py').write_text(textwrap.dedent(body))


def test_lazy_entry_is_not_imported_until_get(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write_module(tmp_path, 'acframe_lazy_probe', """
        class Heavy:
            pass
    """)
    registry = Registry('thing')
    registry.register_lazy('heavy', 'acframe_lazy_probe:Heavy')

    assert 'heavy' in registry and registry.names() == ['heavy']
    assert registry.location('heavy') == 'acframe_lazy_probe:Heavy'
    assert not registry.is_loaded('heavy')
    assert 'acframe_lazy_probe' not in sys.modules

    heavy = registry.get('heavy')
    assert heavy.__name__ == 'Heavy'
    assert 'acframe_lazy_probe' in sys.modules
    assert registry.is_loaded('heavy')
    monkeypatch.delitem(sys.modules, 'acframe_lazy_probe')


def test_builtin_entries_are_lazy_locations_in_acframe():
    assert POLICY_REGISTRY.location('impala') == 'acframe.policy.impala:IMPALAPolicy'
    assert ENV_REGISTRY.location('gym') == 'acframe.envs.gym_env:make_gym_env'


def test_unknown_name_lists_known_names_and_the_nearest():
    registry = Registry('policy')
    for name in ('impala', 'a2c', 'acer'):
        registry.register(name, object())
    with pytest.raises(RegistryError) as info:
        registry.get('impalla')
    message = str(info.value)
    assert "unknown policy 'impalla'" in message
    assert "Did you mean 'impala'?" in message
    assert 'Known policies: a2c, acer, impala' in message
    assert "register(NAME)" in message and "register('impalla')" not in message  # how to add one, not the misspelling
    with pytest.raises(RegistryError, match=r"register\('my_algo'\)"):  # nothing near: the name as given
        registry.get('my_algo')


def test_unknown_name_without_a_close_match_still_lists_known_names():
    registry = Registry('model')
    registry.register('vac', object())
    message = str(pytest.raises(RegistryError, registry.get, 'transformer').value)
    assert 'Did you mean' not in message
    assert 'vac' in message


def test_import_names_imports_a_user_module_that_registers_itself(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write_module(tmp_path, 'acframe_user_plugin', """
        from acframe.registry import ENV_REGISTRY

        @ENV_REGISTRY.register('user_plugin_env_for_registry_test')
        def make(env_cfg, **overrides):
            return 'made'
    """)
    assert 'user_plugin_env_for_registry_test' not in ENV_REGISTRY
    import_names(['acframe_user_plugin'])
    try:
        assert ENV_REGISTRY.build('user_plugin_env_for_registry_test', {}) == 'made'
    finally:
        ENV_REGISTRY._entries.pop('user_plugin_env_for_registry_test', None)
        sys.modules.pop('acframe_user_plugin', None)


def test_import_names_with_a_missing_module_names_it(tmp_path, monkeypatch):
    with pytest.raises(RegistryError, match="cannot import module 'no_such_acframe_plugin'"):
        import_names(['no_such_acframe_plugin'])
    (tmp_path / 'my_registry_test_models.py').write_text('')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistryError, match=r"cannot import module 'my_registry_test_modelz' .*; did you mean "
                                            r"'my_registry_test_models'\?"):  # (a typo: the module beside it named)
        import_names(['my_registry_test_modelz'])
    with pytest.raises(RegistryError, match=r"cannot import module 'my_registry_test_models.py' .*; did you mean "
                                            r"'my_registry_test_models'\?"):  # (its file's name given)
        import_names(['my_registry_test_models.py'])


def test_a_module_found_whose_own_import_fails_is_not_called_missing(tmp_path, monkeypatch):
    (tmp_path / 'acframe_broken_plugin.py').write_text('import numpy\nimport no_such_dependency_of_it\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistryError) as info:
        import_names(['acframe_broken_plugin'])
    line = str(info.value)
    assert line.startswith("import_names: importing 'acframe_broken_plugin' raised ModuleNotFoundError: No module named "
                           "'no_such_dependency_of_it' (at ") and 'acframe_broken_plugin.py:2' in line, line
    assert line.endswith('install what it imports or fix that import') and 'fix the module name' not in line
    with pytest.raises(RegistryError, match="cannot import module 'acframe.no_such_part'"):  # a missing submodule
        import_names(['acframe.no_such_part'])


def test_a_module_inside_a_refused_folder_is_never_imported_whatever_sys_path_holds(tmp_path, monkeypatch):
    """The working folder on sys.path makes a run folder in it a namespace package; its modules are located
    without running anything and refused, and a package's __init__ inside it does not run either."""
    run = tmp_path / 'somerun'
    (run / 'pkg').mkdir(parents=True)
    (run / 'evil.py').write_text("open('MARKER', 'w').write('x')\n")
    (run / 'pkg' / '__init__.py').write_text("open('MARKER', 'w').write('x')\n")
    (run / 'pkg' / 'mod.py').write_text("open('MARKER', 'w').write('x')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ('somerun.evil', 'somerun.pkg', 'somerun.pkg.mod'):
        with pytest.raises(RegistryError, match='never imports code from a run'):
            import_names([name], refuse_under=[str(run)])
        assert name not in sys.modules
    assert not (tmp_path / 'MARKER').exists()
    import_names(['json'], refuse_under=[str(run)])  # what lies elsewhere imports as before


def test_fuzzy_matching_skips_names_too_long_to_compare_quickly():
    import time

    from acframe.registry import closest

    assert closest('impal', ['impala', 'a2c']) == 'impala'
    start = time.perf_counter()
    assert closest('x' * 100_000, ['impala', 'a2c', 'y' * 100_000]) is None
    assert time.perf_counter() - start < 1.0


def test_a_name_in_other_case_is_matched_to_the_registered_one():
    """'MY_MLP' got no "did you mean 'my_mlp'": difflib rates case differences as far apart."""
    from acframe import MODEL_REGISTRY
    from acframe.errors import RegistryError
    from acframe.registry import closest

    assert closest('MY_MLP', ['my_mlp', 'vac']) == 'my_mlp' and closest('IMPALA', ['impala', 'a2c']) == 'impala'
    with pytest.raises(RegistryError, match=r"unknown model 'VAC'\. Did you mean 'vac'\?"):
        MODEL_REGISTRY.get('VAC')


def test_a_built_in_not_imported_yet_is_not_silently_replaced():
    from acframe.registry import Registry
    registry = Registry('logger')
    registry.register_lazy('jsonl', 'acframe.loggers.files:JsonlLogger')

    class Mine:
        pass
    with pytest.raises(RegistryError, match="logger 'jsonl' is already registered by acframe.loggers.files:JsonlLogger; "
                                            "pick another name or pass force=True"):
        registry.register('jsonl', Mine)
    assert registry.location('jsonl') == 'acframe.loggers.files:JsonlLogger'
    registry.register('jsonl', Mine, force=True)  # on purpose
    assert registry.get('jsonl') is Mine
    from acframe.loggers.files import JsonlLogger  # the built-in's own module registering it is not a clash
    fresh = Registry('logger')
    fresh.register_lazy('jsonl', 'acframe.loggers.files:JsonlLogger')
    fresh.register('jsonl', JsonlLogger)
    assert fresh.get('jsonl') is JsonlLogger
