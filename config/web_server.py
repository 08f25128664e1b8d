"""gunicorn's settings for `make run` and the image (`gunicorn --config python:config.web_server`): its hooks only; the
command line gives the bind address, workers and timeouts.

Without a broker (`REDIS_URL` unset) each web process starts the periodic jobs' scheduler once it has loaded the
application (config/in_process_schedule.py): there is no Celery beat then, and the jobs (invoices issued at period
end, statuses, overdue marking, alerts, webhook retries) would otherwise never run."""


def post_worker_init(worker):
    from config.in_process_schedule import periodic_jobs_start_without_broker

    if periodic_jobs_start_without_broker():
        worker.log.info("periodic jobs run in this process (no REDIS_URL: no Celery beat)")
