"""Status lines: printed where the program configured no logging, logged where it did."""
import subprocess
import sys

import pytest


STATUS = ("import logging, sys\n"
          "from funcsac.driver.run.status import LOGGER, showing_status\n"
          "if sys.argv[1] == 'configured':\n"
          "    logging.basicConfig(level=logging.INFO, stream=sys.stderr)\n"
          "with showing_status():\n"
          "    LOGGER.info('a status line')\n"
          "print(LOGGER.handlers, LOGGER.level)\n")


@pytest.mark.parametrize("logging_is", ["unconfigured", "configured"])
def test_status_lines_print_unless_logging_is_configured(logging_is):
    """A run's status lines go to stdout where the program configured no logging, and through
    its handlers where it did; the ``funcsac`` logger is left as it was."""
    done = subprocess.run([sys.executable, "-c", STATUS, logging_is], capture_output=True,
                          text=True, timeout=120, check=True)
    if logging_is == "unconfigured":
        assert done.stdout == "funcsac: a status line\n[] 0\n" and done.stderr == ""
    else:
        assert done.stdout == "[] 0\n" and done.stderr == "INFO:funcsac:a status line\n"
