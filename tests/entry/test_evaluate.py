"""Specification of ``acframe -m eval --load RUN_DIR_OR_CKPT``: one result line, a JSON of the episodes, videos,
and the nominal or drawn parameters of a domain-randomized run."""
import json
import os
import re
import shutil
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from acframe.cli import main
from acframe.entry.evaluate import evaluate_run, episode_quota
from acframe.errors import ConfigWarning


def run_cli(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_run_folder_alone_is_evaluated_with_its_best_checkpoint(trained_run, capsys):
    code, out, err = run_cli(['-m', 'eval', '--load', str(trained_run)], capsys)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('[eval] return ')
    result_file = trained_run / 'eval' / 'ckpt_best_seed0.json'
    assert str(result_file) in lines[0] and 'over 4 episodes of ckpt_best.pth' in lines[0]
    report = json.loads(result_file.read_text())
    assert len(report['returns']) == len(report['lengths']) == report['episodes'] == 4
    assert report['min'] == min(report['returns']) and report['max'] == max(report['returns'])
    assert f"{report['mean']:.2f} ± {report['std']:.2f}" in lines[0]
    # the run's own evaluation envs and seeds: the return that made this checkpoint the best
    summary = json.loads((trained_run / 'summary.json').read_text())
    assert report['mean'] == pytest.approx(summary['best_eval_return'])
    assert report['checkpoint'].endswith('ckpt/ckpt_best.pth') and report['train_iter'] is not None


def test_a_checkpoint_in_ckpt_finds_its_run_and_seed_episodes_and_out_apply(trained_run, tmp_path, capsys):
    out_file = tmp_path / 'latest.json'
    code, out, err = run_cli(['-m', 'eval', '--load', str(trained_run / 'ckpt' / 'ckpt_latest.pth'), '--episodes', '6',
                              '-s', '3', '--out', str(out_file)], capsys)
    assert code == 0, err
    report = json.loads(out_file.read_text())
    assert report['episodes'] == 6 and report['seed'] == 3 and report['checkpoint'].endswith('ckpt_latest.pth')
    assert report['run_dir'] == str(trained_run)


def test_an_evaluation_with_other_settings_keeps_the_runs_own_result(trained_run, tmp_path, capsys):
    """A sampled evaluation (an override) of the checkpoint a greedy one already evaluated writes a file of its
    own, named by the values that differ from the run's config, and every file says how it was played; so does one
    of another number of episodes (``--episodes`` or ``env.n_evaluator_episode`` alike)."""
    run = tmp_path / 'run'
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns('eval'))  # without the other tests' results
    greedy = evaluate_run(str(run), seed=5)
    sampled = evaluate_run(str(run), seed=5, overrides=['policy.eval.deterministic=False'])
    again = evaluate_run(str(run), seed=5, overrides=['policy.eval.deterministic=False'])
    assert greedy['result_file'] == str(run / 'eval' / 'ckpt_best_seed5.json')
    assert re.fullmatch(re.escape(str(run / 'eval' / 'ckpt_best_seed5_')) + r'[0-9a-f]{8}\.json', sampled['result_file'])
    assert again['result_file'] == sampled['result_file']  # the same settings: the same file, replaced
    kept = json.loads((run / 'eval' / 'ckpt_best_seed5.json').read_text())
    assert kept['deterministic'] is True and kept['settings'] == {} and kept['returns'] == greedy['returns']
    stored = json.loads(open(sampled['result_file']).read())
    assert stored['deterministic'] is False
    assert stored['settings'] == {'differences': {'policy.eval.deterministic': False}}
    # an override that sets the run's own value changes nothing: the run's own result
    same = evaluate_run(str(run), seed=5, overrides=['policy.eval.deterministic=True'])
    assert same['result_file'] == greedy['result_file'] and same['returns'] == greedy['returns']
    # another number of episodes, asked for either way
    fewer = evaluate_run(str(run), seed=5, episodes=2)
    assert fewer['result_file'] == str(run / 'eval' / 'ckpt_best_seed5_2ep.json') and fewer['settings'] == {'episodes': 2}
    assert evaluate_run(str(run), seed=5, overrides=['env.n_evaluator_episode=2'])['result_file'] == fewer['result_file']
    # the run's own config named with -c is the run's own setting; another config is another setting
    own = evaluate_run(str(run / 'ckpt' / 'ckpt_best.pth'), config=str(run / 'config.py'), seed=5)
    assert own['result_file'] == greedy['result_file'] and own['settings'] == {}
    with_config = evaluate_run(str(run / 'ckpt' / 'ckpt_best.pth'), config='cartpole_a2c.py', seed=5)
    assert with_config['settings']['differences']['env.evaluator_env_num'] == 10  # the file's, not the run's 4
    assert sorted(p.name for p in (run / 'eval').iterdir()) == sorted(os.path.basename(r['result_file']) for r in (
        greedy, sampled, fewer, with_config))


def test_keys_only_training_reads_are_warned_about_and_do_not_name_another_setting(trained_run, tmp_path):
    """``parallel.learner_num=3`` given to an evaluation is read by nothing: it is said (it was taken without a word)
    and the result is the run's own, not a file of its own. A logger key is read (``--video`` uploads through the
    run's backends) but plays nothing else: not a setting either."""
    run = tmp_path / 'run'
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns('eval'))
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(run), '-s', '5',
                           "parallel={'learner_num': 3}", 'logger.backends=[]'], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ("acframe: warning: parallel configures training only; acting on a trained run (an "
                                   "evaluation, an export, load_policy) ignores it")
    assert str(run / 'eval' / 'ckpt_best_seed5.json') in done.stdout
    assert json.loads((run / 'eval' / 'ckpt_best_seed5.json').read_text())['settings'] == {}
    with pytest.warns(ConfigWarning, match=r'^policy\.other\.replay_buffer\.replay_buffer_size, parallel\.learner_num '
                                           r'configure training only'):
        report = evaluate_run(str(run), seed=5, overrides={'policy.other.replay_buffer.replay_buffer_size': 7,
                                                            'parallel.learner_num': 2})
    assert report['result_file'] == str(run / 'eval' / 'ckpt_best_seed5.json')


def test_a_config_naming_an_evaluation_is_named_without_the_sections_that_play_nothing(trained_run):
    """A checkpoint evaluated with a config (``-c``) is named by the whole config: two configs apart only in their
    parallel, logger or replay buffer keys play the same evaluation and name the same file."""
    from acframe.config import compile_config
    from acframe.entry.evaluate import evaluation_settings

    one = compile_config('cartpole_a2c.py')
    other = compile_config('cartpole_a2c.py', ['parallel.learner_num=2', "logger.backends=['jsonl']",
                                               'policy.other.replay_buffer.replay_buffer_size=64'])
    assert evaluation_settings(one, one, 4, None, None, named_config=True) == \
        evaluation_settings(other, other, 4, None, None, named_config=True)
    assert 'parallel' not in evaluation_settings(one, one, 4, None, None, named_config=True)['config']


def test_the_run_may_be_named_without_load(trained_run, tmp_path, capsys):
    """``acframe -m eval RUN`` (as ``-m plot RUN``) evaluates RUN, overrides after it; ``-m export RUN`` likewise."""
    run = tmp_path / 'run'
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns('eval'))
    code, out, err = run_cli(['-m', 'eval', str(run), '--episodes', '2', 'policy.eval.deterministic=False'], capsys)
    assert code == 0 and err == '', err
    report = json.loads((run / 'eval').joinpath(os.path.basename(out.split(' -> ')[-1].strip())).read_text())
    assert report['episodes'] == 2 and report['deterministic'] is False and report['run_dir'] == str(run)
    code, out, err = run_cli(['-m', 'export', str(run), '--out', str(tmp_path / 'policy.pt')], capsys)
    assert code == 0 and (tmp_path / 'policy.pt').is_file(), err
    code, out, err = run_cli(['-m', 'eval', str(run), str(run)], capsys)  # one run at a time
    assert code == 2 and f"override '{run}' is not of the form key.path=value" in err
    code, out, err = run_cli(['-m', 'eval', 'policy.eval.deterministic'], capsys)  # (an override missing its '=')
    assert code == 2 and err.strip() == ("acframe: error: -m eval policy.eval.deterministic: no run folder or "
                                         "checkpoint of that name; name a run folder or a .pth file in its ckpt/ (an "
                                         "override is key.path=value)")
    named = tmp_path / 'lr=0.1'  # (a folder name with '=' in it, as a sweep may name its runs)
    shutil.copytree(run, named, ignore=shutil.ignore_patterns('eval'))
    code, out, err = run_cli(['-m', 'eval', str(named), '--episodes', '1'], capsys)
    assert code == 0 and str(named / 'eval') in out, err


def test_a_config_edited_between_two_evaluations_is_another_setting(trained_run, tmp_path):
    """Without a run folder the whole config names the result: the same config file, edited, gets another file;
    the same contents under another name get the same one."""
    alone = tmp_path / 'alone.pth'
    shutil.copy(trained_run / 'ckpt' / 'ckpt_best.pth', alone)
    config = tmp_path / 'my_config.py'
    shutil.copy(trained_run / 'config.py', config)
    first = evaluate_run(str(alone), config=str(config), seed=5)
    assert first['result_file'].startswith(str(tmp_path / 'eval' / 'alone_seed5_'))
    assert first['settings']['config']['env']['evaluator_env_num'] == 4
    shutil.copy(config, tmp_path / 'copy.py')
    assert evaluate_run(str(alone), config=str(tmp_path / 'copy.py'), seed=5)['result_file'] == first['result_file']
    # another budget or name is not another setting; another number of episodes is, asked for either way
    budget = tmp_path / 'budget.py'
    budget.write_text(config.read_text().replace("'max_env_step': 1600", "'max_env_step': 99"))
    assert budget.read_text() != config.read_text()
    assert evaluate_run(str(alone), config=str(budget), seed=5)['result_file'] == first['result_file']
    fewer = evaluate_run(str(alone), config=str(config), seed=5, episodes=2)
    assert fewer['result_file'] == first['result_file'].replace('_seed5_', '_seed5_2ep_')
    assert evaluate_run(str(alone), config=str(config), seed=5,
                        overrides=['env.n_evaluator_episode=2'])['result_file'] == fewer['result_file']
    config.write_text(config.read_text().replace("'evaluator_env_num': 4", "'evaluator_env_num': 2"))
    edited = evaluate_run(str(alone), config=str(config), seed=5)
    assert edited['result_file'] != first['result_file']
    assert json.loads(open(first['result_file']).read())['returns'] == first['returns']  # kept


def test_a_run_folder_this_acframe_cannot_compile_is_evaluated_with_a_config(trained_run, tmp_path):
    """A run folder whose config.json holds a key this acframe does not declare (an older or newer acframe's) is
    evaluated with ``-c``, its result named by the whole config as for a checkpoint outside a run folder."""
    run = tmp_path / 'run'
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns('eval'))
    record = json.loads((run / 'config.json').read_text())
    record['config']['env']['a_key_from_elsewhere'] = 1
    (run / 'config.json').write_text(json.dumps(record))
    result = evaluate_run(str(run / 'ckpt' / 'ckpt_best.pth'), config=str(trained_run / 'config.py'), seed=5)
    assert 'config' in result['settings'] and result['result_file'].startswith(str(run / 'eval' / 'ckpt_best_seed5_'))


def test_a_config_and_a_checkpoint_still_work(trained_run, capsys):
    code, out, err = run_cli(['-m', 'eval', '-c', 'cartpole_a2c.py', '--load', str(trained_run / 'ckpt' / 'ckpt_best.pth'),
                              'env.evaluator_env_num=2', 'env.n_evaluator_episode=2'], capsys)
    assert code == 0, err
    assert 'over 2 episodes' in out


def test_a_checkpoint_a_script_saved_through_its_own_learner_shows_its_iter_and_no_env_step(trained_run, tmp_path, capsys):
    """examples/compose_pipeline.py's ``learner.save_checkpoint`` records the train iter only."""
    import torch

    state = torch.load(str(trained_run / 'ckpt' / 'ckpt_best.pth'), weights_only=True)
    own = {'policy': state['policy'], 'train_iter': 60}
    torch.save(own, str(tmp_path / 'own.pth'))
    code, out, err = run_cli(['-m', 'eval', '-c', 'cartpole_a2c.py', '--load', str(tmp_path / 'own.pth'),
                              'env.evaluator_env_num=2', 'env.n_evaluator_episode=2'], capsys)
    assert code == 0, err
    assert 'of own.pth (iter 60), seed 0' in out and 'None' not in out


def test_video_records_each_counted_episode_as_mp4(trained_run, tmp_path):
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    import imageio_ffmpeg

    videos = tmp_path / 'videos'
    # in a fresh interpreter, as a user runs it: rendering (pygame/SDL) and encoding stay out of the test process,
    # whose later tests fork worker processes
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(trained_run), '--episodes', '2',
                          '--video', str(videos), '--out', str(tmp_path / 'r.json')], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / 'r.json').read_text())
    files = sorted(p.name for p in videos.glob('*.mp4'))
    # named by the run and as the result: 2 episodes where the run evaluated 4 (the recordings' staging folder gone)
    assert files == ['cartpole_a2c_ckpt_best_seed0_2ep_env0-episode-0.mp4', 'cartpole_a2c_ckpt_best_seed0_2ep_env1-episode-0.mp4']
    assert sorted(p.name for p in videos.iterdir()) == files
    frames = sorted(imageio_ffmpeg.count_frames_and_secs(str(videos / name))[0] for name in files)
    for count, length in zip(frames, sorted(report['lengths'])):  # episodes are reported in the order they end
        assert length <= count <= length + 1  # a frame per step (and the reset frame)


@pytest.mark.parametrize('signum, group, code, said', [
    ('SIGINT', False, 130, 'acframe: interrupted'),
    ('SIGTERM', False, 143, 'acframe: terminated (SIGTERM)'),  # (ignored: SDL had taken the handler)
    ('SIGTERM', True, 143, 'acframe: terminated (SIGTERM)'),  # (`timeout`'s: "an env raised OSError: Broken pipe")
])
def test_an_interrupted_video_evaluation_leaves_the_videos_of_a_whole_one_as_they_were(trained_run, tmp_path, signum,
                                                                                       group, code, said):
    """Ctrl-C or SIGTERM (to the process, or to its group as ``timeout`` and a terminal send, the encoders with it)
    in the middle: it stops within seconds (each env's partial episode was encoded first), its partial recordings
    are dropped; a former evaluation's videos of the same names are not replaced by cut ones; nothing of it stays in
    the folder."""
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    import signal
    import time

    videos = tmp_path / 'videos'
    videos.mkdir()
    # a former whole evaluation's videos, of the names this one's first episodes get
    before = {f'cartpole_a2c_ckpt_best_seed0_400ep_env{i}-episode-0.mp4': f'a whole episode {i}' for i in range(4)}
    for name, text in before.items():
        (videos / name).write_text(text)
    run = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(trained_run), '--video',
                            str(videos), '--episodes', '400', '--out', str(tmp_path / 'r.json')],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith('.acframe-recording-') for p in videos.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # recording (400 episodes of up to 500 steps take minutes)
    sent = time.monotonic()
    if group:
        os.killpg(run.pid, getattr(signal, signum))
    else:
        run.send_signal(getattr(signal, signum))
    try:
        _, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == code and err.strip().splitlines()[-1] == said, err
    assert time.monotonic() - sent < 15
    assert {p.name: p.read_text() for p in videos.iterdir()} == before
    assert not (tmp_path / 'r.json').exists()


def test_bad_output_paths_are_refused_before_evaluating_and_nothing_is_written(trained_run, tmp_path, capsys):
    (tmp_path / 'a_file').write_text('')
    for args, message in ((['--out', str(trained_run)], f"--out {trained_run}: that is a folder; name the file to "
                                                        f"write in it, e.g. {trained_run / 'result.json'}"),
                          (['--out', str(tmp_path / 'new') + '/'], 'that is a folder; name the file to write in it'),
                          (['--out', str(tmp_path / 'a_file' / 'r.json')], 'a_file is a file, not a folder'),
                          (['--video', str(tmp_path / 'a_file')], 'not a folder; name a folder for the videos'),
                          (['--video', str(tmp_path / 'x.mp4')], 'x.mp4: names the folder the videos go to (one file '
                                                                 'per episode), not a file; e.g. --video '),  # (made)
                          (['env.n_evaluator_episode=3'], '--episodes 1 and env.n_evaluator_episode=3 give two '
                                                          'numbers of episodes; give one of them'),  # (--episodes won)
                          (['--out', '/proc/acframe-no/r.json'], 'cannot be written there')):
        code, out, err = run_cli(['-m', 'eval', '--load', str(trained_run), '--episodes', '1', *args], capsys)
        assert code == 2 and err.count('\n') == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a_file']


def test_an_out_naming_a_file_that_is_not_a_result_is_refused_and_the_file_kept(trained_run, tmp_path, capsys):
    """``--out RUN/ckpt/ckpt_best.pth`` replaced the checkpoint with the result's JSON (the run then read as corrupt),
    ``--out RUN/config.json`` the run's record, ``--out my_script.py`` a script: exit 0 each time. An earlier result
    is replaced, as a second evaluation of the same setting replaces its default file."""
    script = tmp_path / 'my_script.py'
    script.write_text('print("mine")\n')
    for path in (trained_run / 'ckpt' / 'ckpt_best.pth', trained_run / 'config.json', script):
        before = path.read_bytes()
        code, out, err = run_cli(['-m', 'eval', '--load', str(trained_run), '--episodes', '1', '--out', str(path)],
                                 capsys)
        assert code == 2 and err == (f"acframe: error: --out {path}: an existing file that is not an evaluation's "
                                     f"result (-m eval's JSON); name a new file (a result there is replaced)\n"), err
        assert path.read_bytes() == before
    result = tmp_path / 'result.json'
    for episodes in ('1', '2'):
        code, out, err = run_cli(['-m', 'eval', '--load', str(trained_run), '--episodes', episodes, '--out',
                                  str(result)], capsys)
        assert code == 0, err
        assert json.loads(result.read_text())['episodes'] == int(episodes)


def test_an_exported_model_or_a_file_of_the_run_given_for_a_checkpoint_is_named_for_what_it_is(trained_run, tmp_path,
                                                                                               capsys):
    """An -m export file given to --load was "corrupt, cut short or not a torch file" (with torch's own warning);
    RUN/config.json "a checkpoint not in a run folder", RUN/ckpt "not a run folder"."""
    import warnings

    from acframe import load_policy
    from acframe.errors import CheckpointError

    exported = tmp_path / 'policy.pt'
    assert main(['-m', 'export', '--load', str(trained_run), '--out', str(exported)]) == 0
    capsys.readouterr()
    said = (f"'{exported}' is an exported TorchScript model (-m export: the actor alone, to act with outside acframe), "
            f"not a checkpoint; pass the run folder or a .pth file in its ckpt/")
    for args in (['-m', 'eval', '--load', str(exported), '-c', 'cartpole_a2c.py'],
                 ['-c', 'cartpole_a2c.py', '--init-from', str(exported), '--exp-dir', str(tmp_path / 'new')]):
        with warnings.catch_warnings():
            warnings.simplefilter('error')  # (torch's "looks like a TorchScript archive" is not shown either)
            code, out, err = run_cli(args, capsys)
        assert code == 2 and err == f"acframe: error: {said}\n", err
    assert not (tmp_path / 'new').exists()
    with pytest.raises(CheckpointError, match=r"is an exported TorchScript model"):
        load_policy(str(exported), config='cartpole_a2c.py')
    for target, words in ((trained_run / 'config.json', f"a file of the run folder {trained_run}, not a checkpoint; "
                                                        f"pass the folder itself"),
                          (trained_run / 'ckpt', f"the run's checkpoint folder; pass the run folder ({trained_run}: "
                                                 f"its best checkpoint, else its latest) or one .pth file in it")):
        code, out, err = run_cli(['-m', 'eval', '--load', str(target)], capsys)
        assert code == 2 and err.startswith(f"acframe: error: --load {target}: {words}"), err


def test_a_config_of_another_policy_given_for_a_run_folder_is_refused(trained_run, capsys):
    """An A2C run evaluated with -c cartpole_ppo.py played as PPO, its result filed in the A2C run's eval/, without a
    word (--resume refuses the same change); a config of the run's own policy is taken."""
    from acframe import load_policy
    from acframe.errors import ConfigError

    code, out, err = run_cli(['-m', 'eval', '--load', str(trained_run), '-c', 'cartpole_ppo.py', '--episodes', '1'],
                             capsys)
    assert code == 2 and err == (f"acframe: error: --load {trained_run}: the run trained policy 'a2c', and the config "
                                 f"given (-c) builds 'ppo'; drop -c (the run folder's own config is used), or give a "
                                 f"config of policy 'a2c'\n"), err
    with pytest.raises(ConfigError, match=r"builds 'impala'; drop config= \(the run folder's own config is used\)"):
        load_policy(trained_run, config='cartpole_impala.py')
    assert load_policy(trained_run, config='cartpole_a2c.py').cfg.policy.type == 'a2c'


def test_a_video_of_an_envpool_run_is_another_setting(monkeypatch):
    """EnvPool's envs are recorded through gymnasium's chain, which plays other episodes: its result file is
    another (as for env.manager=sync given)."""
    from acframe.config import compile_config
    from acframe.entry.evaluate import _note_recording_manager

    cfg = compile_config('pong_impala.py', ['env.manager=envpool'])
    settings = {}
    _note_recording_manager(cfg, settings)
    assert settings == {'differences': {'env.manager': 'sync'}}
    plain = {}
    _note_recording_manager(compile_config('pong_impala.py'), plain)
    assert plain == {}


def test_episodes_are_split_over_the_envs_as_the_evaluator_does():
    assert episode_quota(6, 4) == [2, 2, 1, 1]
    assert episode_quota(2, 4) == [1, 1, 0, 0]


@pytest.fixture(scope='module')
def randomized_run(tmp_path_factory):
    """A 2-iteration CartPole run whose envs draw a tiny x_threshold (episodes end after a few steps)."""
    run_dir = tmp_path_factory.mktemp('dr') / 'run'
    dr = ["env.domain_randomization.enable=True",
          "env.domain_randomization.params={'x_threshold': {'dist': 'uniform', 'low': 0.001, 'high': 0.002, 'via': 'attribute'}}"]
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', str(run_dir),
                          '--max-train-iter', '2', '-q', 'env.collector_env_num=2', 'env.evaluator_env_num=2',
                          'env.n_evaluator_episode=2', *dr], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr  # trained in its own interpreter, like trained_run
    return run_dir


def test_a_randomized_run_evaluates_with_nominal_or_drawn_parameters(randomized_run, tmp_path):
    nominal = evaluate_run(str(randomized_run), out=str(tmp_path / 'n.json'))  # the run evaluated with nominal ones
    assert nominal['domain_params'] == 'nominal' and nominal['drawn_params'] is None
    drawn = evaluate_run(str(randomized_run), domain_params='drawn', out=str(tmp_path / 'd.json'))
    assert drawn['domain_params'] == 'drawn' and len(drawn['drawn_params']) == 2
    assert all(0.001 <= p['x_threshold'] <= 0.002 for p in drawn['drawn_params'])
    # the drawn threshold ends every episode within a few steps; the nominal 2.4 does not
    assert max(drawn['lengths']) < 5 < min(nominal['lengths'])
    again = evaluate_run(str(randomized_run), domain_params='drawn', out=str(tmp_path / 'd2.json'))
    assert again['drawn_params'] == drawn['drawn_params'] and again['returns'] == drawn['returns']
    # without --out: the run evaluated with nominal parameters, so drawn ones are another setting, in a file of its own
    own, other = evaluate_run(str(randomized_run)), evaluate_run(str(randomized_run), domain_params='drawn')
    assert own['result_file'] == str(randomized_run / 'eval' / 'ckpt_best_seed0.json') and own['settings'] == {}
    assert other['settings'] == {'domain_params': 'drawn'}
    assert re.fullmatch(re.escape(str(randomized_run / 'eval' / 'ckpt_best_seed0_')) + r'[0-9a-f]{8}\.json',
                        other['result_file'])
    assert evaluate_run(str(randomized_run), domain_params='nominal')['result_file'] == own['result_file']


@pytest.mark.parametrize('args, message', [
    (['-m', 'eval'], '-m eval needs the run: acframe -m eval RUN_DIR_OR_CKPT (or --load'),
    (['-m', 'eval', '--load', 'missing'], '--load missing: no such file or folder'),
    (['-m', 'eval', '--load', 'TRAINED', '--domain-params', 'drawn'], '--domain-params drawn: this run has no env.domain_randomization'),
    (['-m', 'eval', '--load', 'TRAINED', '--episodes', '0'], '--episodes 0: evaluate at least 1 episode'),
    (['-m', 'eval', '--load', 'TRAINED', '--max-env-step', '5'], '--max-env-step does not apply to -m eval'),
    (['-c', 'cartpole_a2c.py', '--episodes', '3'], '--episodes belongs to -m eval/plot/export'),
])
def test_bad_eval_input_exits_2_with_one_line(args, message, trained_run, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli([str(trained_run) if a == 'TRAINED' else a for a in args], capsys)
    assert code == 2 and err.count('\n') == 1 and message in err, err


def test_a_long_evaluation_shows_its_progress_and_the_time_left(trained_run):
    """-m eval of a billion episodes says within seconds how far it is and how long the rest will take."""
    import re
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(trained_run),
                             '--episodes', '1000000000', '--out', str(trained_run.parent / 'long.json')],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # the first progress line comes after ~5 s
        assert re.fullmatch(r'\[eval\] \d+/1000000000 episodes in \d+ s, about [\d.]+ (days|h|min) left\n', line), line
    finally:
        proc.kill()
        proc.communicate()


def test_an_evaluation_on_another_env_id_does_not_warn_about_the_stop_value(trained_run, tmp_path):
    """Training warns when an override changes ``env.env_id`` and keeps the other env's stop value; a run that is
    done never stops early, so ``-m eval`` (and ``load_policy``) do not."""
    import warnings

    from acframe.errors import ConfigWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        report = evaluate_run(str(trained_run), overrides=['env.env_id=CartPole-v0'], episodes=1,
                              out=str(tmp_path / 'v0.json'))
    assert report['env_id'] == 'CartPole-v0'
    assert not [w for w in caught if issubclass(w.category, ConfigWarning)], [str(w.message) for w in caught]


def test_video_of_an_env_that_cannot_render_says_so(tmp_path):
    """An env that takes no render_mode (acframe's toy_dict, many user envs) draws no frames: one line naming the
    env and --video, not its keyword arguments."""
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    from acframe.config import compile_config
    from acframe.entry.evaluate import evaluator_env
    from acframe.errors import ConfigError

    cfg = compile_config('cartpole_impala.py', ['env.type=toy_dict'])
    with pytest.raises(ConfigError, match=r"--video: env 'toy_dict' takes no render_mode, so it draws no frames "
                                          r"to record; leave --video out"):
        evaluator_env(cfg, 0, 'nominal', str(tmp_path), 1)


def test_the_toy_pixel_envs_are_recorded_as_they_look(tmp_path):
    """pixels.md's toy envs took no render_mode, so -m eval --video of their runs was refused: they draw their grid
    (enlarged to at least 128 pixels) with render_mode='rgb_array'."""
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    from acframe.cli import main
    from acframe.envs import build_env

    run = str(tmp_path / 'goal')
    assert main(['-c', 'pixel_goal_impala.py', '--exp-dir', run, '--max-train-iter', '1', '-q',
                 'env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1']) == 0
    assert main(['-m', 'eval', '--load', run, '--episodes', '1', '--video', str(tmp_path / 'video'), '-q']) == 0
    assert [name for name in os.listdir(tmp_path / 'video') if name.endswith('.mp4')]
    for kind, shape in (('toy_pixel_goal', (128, 128, 3)), ('toy_pixel_dot', (128, 128, 3))):
        env = build_env({'type': kind, 'env_id': kind}, 0, 0, 'evaluator', render_mode='rgb_array')
        obs, _ = env.reset(seed=0)
        frame = env.render()
        assert frame.shape == shape and frame.dtype == np.uint8 and frame.max() == 255
        image = obs['image'][0] if isinstance(obs, dict) else obs[-1]
        assert (frame[::frame.shape[0] // image.shape[0], ::frame.shape[1] // image.shape[1], 0] == 255).sum() \
            == (image == 255).sum()  # the dot where the observation has it


def test_an_evaluation_on_an_env_without_the_runs_action_mask_is_warned_about(tmp_path, capfd):
    """-m eval of a masked run with env.type overridden to the same game without its mask acted without it in
    silence; env.env_id naming that env type, beside the run's env.type (whose factory ignores it), was silently the
    masked game again: refused, naming env.type."""
    from acframe.cli import main

    run = str(tmp_path / 'run')
    assert main(['-c', 'tictactoe_ppo_masked.py', '--exp-dir', run, '--max-env-step', '1024', '-q',
                 'env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1']) == 0
    capfd.readouterr()
    import subprocess
    import sys
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', run,
                          'env.type=toy_tictactoe_nomask', '--episodes', '2'], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert ("acframe: warning: the run trained with action masks (env 'toy_tictactoe' gives 'action_mask'); env "
            "'toy_tictactoe_nomask (toy_tictactoe)' gives none, so this evaluation acts without them") in out.stderr, out.stderr
    assert main(['-m', 'eval', '--load', run, 'env.env_id=toy_tictactoe_nomask', '--episodes', '2']) == 2
    assert capfd.readouterr().err.strip().splitlines()[-1] == (
        "acframe: error: env.env_id=toy_tictactoe_nomask names an env type, but env.type 'toy_tictactoe' builds the "
        "env (its factory does not build another type by its env_id): override env.type=toy_tictactoe_nomask instead")


def test_frames_of_every_common_form_are_recorded_as_rgb_of_even_size():
    """(H, W, 1) frames gave a corrupt video of 3 frames, 2-D or None frames none and no word, floats in [0, 1] a
    black one, odd sizes a warning of imageio's per file."""
    from acframe.entry.evaluate import rgb_frame

    grey = np.arange(15, dtype=np.uint8).reshape(3, 5)
    for frame in (grey, grey[..., None], np.repeat(grey[..., None], 3, -1),
                  np.concatenate([np.repeat(grey[..., None], 3, -1), np.zeros((3, 5, 1), np.uint8)], -1),
                  grey.astype(np.float32) / 255.0, grey.astype(np.int64)):
        rgb = rgb_frame(frame)
        assert rgb.shape == (4, 6, 3) and rgb.dtype == np.uint8 and rgb.flags.c_contiguous
        np.testing.assert_array_equal(rgb[:3, :5, 0], grey)  # (the odd row and column repeat the edge)
        np.testing.assert_array_equal(rgb[3, :5, 1], grey[2])
    assert rgb_frame(np.ones((2, 2), bool)).max() == 255
    for frame in (None, [], np.zeros((4, 4, 2)), np.zeros((2, 2, 2, 3)), np.zeros((0, 4, 3))):
        assert rgb_frame(frame) is None


class _FrameEnv(gym.Env):
    """Three-step episodes whose ``render()`` gives ``frame``."""
    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)
    metadata = {'render_modes': ['rgb_array'], 'render_fps': 0.5}

    def __init__(self, frame):
        self.frame, self.render_mode, self.t = frame, 'rgb_array', 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), 0.0, self.t >= 3, False, {}

    def render(self):
        return self.frame


def test_an_env_whose_render_gives_no_frame_is_said_once_and_one_of_grey_frames_is_recorded(tmp_path):
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    import warnings

    import imageio_ffmpeg

    from acframe.entry.evaluate import EpisodeRecorder
    from acframe.errors import ConfigWarning

    env = EpisodeRecorder(_FrameEnv(np.full((9, 7, 1), 200, np.uint8)), str(tmp_path), 'grey', 2)
    for _ in range(3):  # (two recorded, the third not)
        env.reset()
        while not env.step(0)[2]:
            pass
    env.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ['grey-episode-0.mp4', 'grey-episode-1.mp4']
    assert imageio_ffmpeg.count_frames_and_secs(str(tmp_path / names[0]))[0] == 4  # (the reset frame, 3 steps)
    none = EpisodeRecorder(_FrameEnv(None), str(tmp_path / 'none'), 'none', 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for _ in range(2):
            none.reset()
            none.step(0)
    none.close()
    assert [str(w.message) for w in caught if w.category is ConfigWarning] == [
        "--video: none's render() gave NoneType, not a frame (H, W, 3), (H, W, 4), (H, W, 1) or (H, W); its episodes "
        "are not recorded"]


def test_a_full_disk_under_the_videos_is_one_line_and_leaves_neither_videos_nor_a_result(trained_run, tmp_path):
    """A real 20 KiB tmpfs: 25 lines of ffmpeg's, then 'an env raised OSError: [Errno 32] Broken pipe' (or, the disk
    filling at a file's end, a cut video and exit 0)."""
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    from fixtures.tmpfs import tmpfs

    disk = tmp_path / 'disk'
    disk.mkdir()
    with tmpfs(disk, '20k') as refused:
        if refused:
            pytest.skip(refused)
        done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(trained_run),
                               '--episodes', '4', '--video', str(disk / 'videos'), '--out', str(tmp_path / 'r.json')],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stderr.count('\n') == 1, done.stderr
        assert re.fullmatch(rf"acframe: error: --video: the video {re.escape(str(disk / 'videos'))}/cartpole_a2c_"
                            rf"ckpt_best_seed0_env\d-episode-0.mp4 could not be written: no space left on the device; "
                            rf"free disk space or record to another folder\n", done.stderr), done.stderr
        assert not (disk / 'videos').exists() and not (tmp_path / 'r.json').exists()
