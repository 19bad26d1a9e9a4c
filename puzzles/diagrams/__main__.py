"""`python -m puzzles.diagrams [DIRECTORY]`: write every diagram (default: assets/)."""

import sys

from puzzles.diagrams import main

sys.exit(main())
