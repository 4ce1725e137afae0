"""Ready-made acframe configs: ``acframe -c cartpole_impala.py`` finds them by name."""
