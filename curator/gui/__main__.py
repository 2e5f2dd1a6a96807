import sys

from curator.gui.app import main

sys.exit(main(sys.argv[1:]))
