"""Query rows (``rows``: add, list, normalise, ids) and production log import (``logs``)."""
