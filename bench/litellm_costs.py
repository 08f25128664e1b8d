#!/usr/bin/env python3
"""LiteLLM's side of the differential check (bench/litellm_diff.py): runs in LiteLLM's own virtualenv
(`make litellm-diff` makes it, var/litellm-venv), never in the service's.

Reads cases as JSON on stdin, a list of {id, model, provider, input, output, cache_read, cache_write, at}, and
writes {"costs": {id: [prompt_cost, completion_cost] or {"error": ...}}} to the file named by its argument
(LiteLLM prints notices of its own on stdout). Each case is priced by
`litellm.cost_per_token` with the price map bundled in the wheel (never fetched), the model named as a caller
names it (model without the provider prefix, `custom_llm_provider` the provider a call goes to), the prompt
tokens counting the cached ones as OpenAI reports them, and the billing instant pinned to the case's `at` so
that off-peak windows are decided by the case's time, not the wall clock.
"""
import json
import os
import sys
from datetime import datetime
from importlib.metadata import version

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # the wheel's own prices: the release the catalog came from

import litellm  # noqa: E402
from litellm._internal_context import pinned_billing_time  # noqa: E402


def cost(case: dict) -> list[float] | dict:
    prompt = case["input"] + case["cache_read"] + case["cache_write"]
    try:
        with pinned_billing_time(datetime.fromisoformat(case["at"])):
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=case["model"], custom_llm_provider=case["provider"], prompt_tokens=prompt,
                completion_tokens=case["output"], cache_read_input_tokens=case["cache_read"],
                cache_creation_input_tokens=case["cache_write"])
    except Exception as error:  # noqa: BLE001  (reported per case: LiteLLM raises bare Exception for unmapped models)
        return {"error": f"{type(error).__name__}: {str(error)[:200]}"}
    return [prompt_cost, completion_cost]


def main() -> None:
    cases = json.load(sys.stdin)
    costs = {case["id"]: cost(case) for case in cases}
    with open(sys.argv[1], "w", encoding="utf-8") as output:
        json.dump({"litellm_version": version("litellm"), "costs": costs}, output)


if __name__ == "__main__":
    main()
