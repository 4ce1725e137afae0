from setuptools import find_packages, setup

setup(
    name="acframe",
    version="0.1.0",
    description="A plugin-based actor-critic reinforcement-learning framework (A2C, ACER, IMPALA) on PyTorch.",
    long_description=open("README.md").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=find_packages(include=["acframe", "acframe.*", "dizoo_configs", "dizoo_configs.*"]),
    install_requires=[
        "torch==2.13.0",
        "gymnasium>=1.0",
        "numpy",
        "easydict",
        "DI-treetensor",
        "tensorboardX",
        # learning curves as PNG (acframe -m plot --out FILE.png): drawn with the Agg backend, no display needed
        "matplotlib",
    ],
    extras_require={
        "test": ["pytest", "pytest-timeout", "pytest-xdist", "hypothesis"],
        "ray": ["ray"],
        "box2d": ["gymnasium[box2d]"],
        # acframe -m eval --video: each frame is streamed to ffmpeg (imageio-ffmpeg's wheel ships it)
        "video": ["imageio-ffmpeg"],
        # acframe -m export --out FILE.onnx: torch's ONNX exporter needs onnx + onnxscript; onnxruntime runs the file
        "onnx": ["onnx", "onnxscript", "onnxruntime"],
        "atari": ["ale-py>=0.9", "opencv-python-headless"],
        "envpool": ["envpool"],
        # the MuJoCo rows of the ladder (HalfCheetah-v5, Hopper-v5: dizoo_configs/halfcheetah_ppo.py ...)
        "mujoco": ["gymnasium[mujoco]"],
        # bench/bench_ppo.py's comparison and bench/ladder.py (SB3 with the RL-Zoo settings side by side, curve plots)
        "bench": ["stable-baselines3>=2.9", "matplotlib", "gymnasium[box2d]"],
        # acframe -m tune: Optuna's samplers, pruners and SQLite storage (docs/tuning.md)
        "tune": ["optuna"],
        # logger.backends=['wandb'] / ['mlflow']: Weights & Biases and MLflow tracking (docs/logging.md)
        "wandb": ["wandb"],
        "mlflow": ["mlflow"],
        # env.type='pettingzoo_classic': PettingZoo's two-player games (connect_four_v3 ...) against a fixed opponent
        "pettingzoo": ["pettingzoo>=1.24", "pygame-ce"],
    },
    entry_points={"console_scripts": ["acframe=acframe.cli:main"]},
)
