"""The WSGI entry point gunicorn serves (`make run`, the container) tunes the garbage collector."""
import gc
import importlib


def test_loading_the_application_freezes_startup_objects_and_widens_the_youngest_generation():
    threshold = gc.get_threshold()
    gc.unfreeze()
    try:
        import config.wsgi

        importlib.reload(config.wsgi)
        assert callable(config.wsgi.application)
        assert gc.get_freeze_count() > 10_000  # models, URL patterns, views: out of every collection's walk
        assert gc.get_threshold()[0] == 7_000
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
