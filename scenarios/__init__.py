"""The standard scenario suite, shipped as data inside the package (`SUITE_DIR`)."""
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent

__all__ = ["SUITE_DIR"]
