import sys

from corebench.cli import main

sys.exit(main())
