"""The Celery app. Without REDIS_URL tasks run inline (eager); the beat schedule comes from config.schedule."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("billing")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def install_beat_schedule(sender, **kwargs):
    from config.schedule import beat_schedule

    sender.conf.beat_schedule = beat_schedule()
