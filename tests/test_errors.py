"""Which frames of a traceback are the user's: the file and line a one-line error points at."""
import os

import acframe
from acframe.errors import PolicyError, StopTraining, innermost_user_frame, is_user_file, user_code_error


def test_user_files_are_those_of_no_library(tmp_path):
    mine = tmp_path / 'my_env.py'
    mine.write_text('')
    assert is_user_file(str(mine))
    assert not is_user_file(os.path.join(os.path.dirname(acframe.__file__), 'cli.py'))  # acframe's
    assert not is_user_file(os.__file__)  # the standard library's
    assert not is_user_file('<string>')
    # a compiled extension's frame names its source relative to nothing (treevalue's Cython): a library's
    assert not is_user_file('treevalue/tree/func/cfunc.pyx')


def test_the_innermost_user_frame_is_named_past_library_frames(tmp_path):
    mine = str(tmp_path / 'my_buffer.py')
    open(mine, 'w').close()
    frames = [(mine, 12, 'sample'), ('treevalue/tree/func/cfunc.pyx', 76, '_c_func_treelize_run')]
    assert innermost_user_frame(frames) == f"{mine}:12 in sample"


def test_stop_training_raised_by_what_is_no_hook_is_one_line_saying_who_may_raise_it():
    error = user_code_error(StopTraining('loss plateau'), "the policy's learn mode")
    assert isinstance(error, PolicyError) and str(error) == (
        "the policy's learn mode raised acframe.StopTraining (loss plateau); a run is ended early by a hook raising it "
        "(a learner, collector or evaluator hook: docs/logging.md)")
