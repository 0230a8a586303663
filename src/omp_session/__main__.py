"""``python -m omp_session``: the ``omp-session`` command line."""

from omp_session._launcher import main

main()
