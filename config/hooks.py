"""Every hook, listed once: which app's work runs at which moment of a lower app (core/hooks.py).

The composition root may import every app; the apps themselves import only downwards. The composition root's app
(config/apps.py) installs these from its `ready()`, in every process that sets Django up (web, worker, beat, management commands).
"""


def install_hooks() -> None:
    from billing.hooks import refuse_detaching_a_billed_month, refuse_marking_a_billed_customer_internal
    from billing.recording import usage_ingested
    from catalog.services import catalog_loaded
    from controls.hooks import evaluate_spend_caps_after_ingestion
    from customers.hooks import reprice_unpriced_events_after_catalog_load
    from customers.partitions import ledger_month_detaching
    from customers.services import customer_marking_internal

    usage_ingested.register(evaluate_spend_caps_after_ingestion)
    catalog_loaded.register(reprice_unpriced_events_after_catalog_load)
    ledger_month_detaching.register(refuse_detaching_a_billed_month)
    customer_marking_internal.register(refuse_marking_a_billed_customer_internal)
