"""`python -m threadkeep`: the same command as `threadkeep`, for environments without the script on PATH."""

from threadkeep.cli import run

if __name__ == "__main__":
    run()
