import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from core.chunked_bodies import ChunkedBodies  # noqa: E402 (needs the settings above)

application = ChunkedBodies(django_application)  # a chunked body read whole, its length known (core/chunked_bodies.py)

# The cyclic garbage collector, tuned for a web worker (docs/performance.md): what a worker loads at startup
# (models, URL patterns, views, serializers) lives as long as the process, so load it all now and freeze it
# out of the collector's view; and collect the youngest generation every 7,000 allocations instead of 700
# (a recording batch allocates that many short-lived objects, nearly all freed by reference counting).
get_resolver().url_patterns
gc.freeze()
gc.set_threshold(7_000, 10, 10)
