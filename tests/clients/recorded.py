"""Provider response bodies as the OpenAI and Anthropic APIs send them (usage objects included), served
by the fake endpoint to the official SDKs."""

OPENAI_CHAT_COMPLETION = {
    "id": "chatcmpl-BfGk0dQk8Zq3pTn1r4W2xYv9aLmN3", "object": "chat.completion", "created": 1764000000,
    "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_efad92c60b", "service_tier": "default",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": "Your ticket is resolved.", "refusal": None,
                             "annotations": []}}],
    "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
              "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
}

# stream_options={"include_usage": true}: the last chunk carries usage and no choices
OPENAI_CHAT_STREAM = [
    {"id": "chatcmpl-S1", "object": "chat.completion.chunk", "created": 1764000001,
     "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_efad92c60b",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                  "finish_reason": None}], "usage": None},
    {"id": "chatcmpl-S1", "object": "chat.completion.chunk", "created": 1764000001,
     "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_efad92c60b",
     "choices": [{"index": 0, "delta": {"content": "Done."}, "logprobs": None, "finish_reason": None}],
     "usage": None},
    {"id": "chatcmpl-S1", "object": "chat.completion.chunk", "created": 1764000001,
     "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_efad92c60b",
     "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}], "usage": None},
    {"id": "chatcmpl-S1", "object": "chat.completion.chunk", "created": 1764000001,
     "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_efad92c60b", "choices": [],
     "usage": {"prompt_tokens": 80, "completion_tokens": 5, "total_tokens": 85,
               "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
               "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                             "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}},
]

OPENAI_RESPONSE = {
    "id": "resp_68c1f0e2a6b48190a1b2c3d4e5f60718", "object": "response", "created_at": 1764000002,
    "status": "completed", "model": "gpt-4o-mini-2024-07-18", "error": None, "incomplete_details": None,
    "instructions": None, "max_output_tokens": None, "parallel_tool_calls": True, "previous_response_id": None,
    "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": [], "truncation": "disabled",
    "metadata": {}, "text": {"format": {"type": "text"}},
    "output": [{"type": "message", "id": "msg_68c1f0e3", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Refund issued.", "annotations": []}]}],
    "usage": {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1536}, "output_tokens": 120,
              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2120},
}

ANTHROPIC_MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
    "model": "claude-sonnet-4-5", "stop_reason": "end_turn", "stop_sequence": None,
    "content": [{"type": "text", "text": "The contract's renewal clause is in section 9."}],
    "usage": {"input_tokens": 50, "output_tokens": 100, "cache_creation_input_tokens": 2000,
              "cache_read_input_tokens": 1000, "service_tier": "standard"},
}

ANTHROPIC_STREAM = [
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_01Stream", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 3000}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "Clause 9."}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 42}}),
    ("message_stop", {"type": "message_stop"}),
]

# Cache writes of both lifetimes (`cache_creation` splits `cache_creation_input_tokens`), served at priority.
ANTHROPIC_MESSAGE_CACHE_LIFETIMES = {
    "id": "msg_01Q7ZkD2x9LrVt3Ww8JbYc4N", "type": "message", "role": "assistant",
    "model": "claude-sonnet-4-5", "stop_reason": "end_turn", "stop_sequence": None,
    "content": [{"type": "text", "text": "Summarised the 40-page brief."}],
    "usage": {"input_tokens": 40, "output_tokens": 80, "cache_creation_input_tokens": 3000,
              "cache_read_input_tokens": 0,
              "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
              "service_tier": "priority"},
}

# One result of a Message Batch (`client.messages.batches.results(...)`): its message says `service_tier: batch`.
ANTHROPIC_BATCH_RESULT = {
    "custom_id": "brief-17", "result": {"type": "succeeded", "message": {
        "id": "msg_01BatchR3sult", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "stop_reason": "end_turn", "stop_sequence": None, "content": [{"type": "text", "text": "Done."}],
        "usage": {"input_tokens": 100000, "output_tokens": 10000, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "service_tier": "batch"}}},
}

# A chat completion served at the flex tier.
OPENAI_CHAT_FLEX = {
    "id": "chatcmpl-FlexC8x1", "object": "chat.completion", "created": 1764000100, "model": "gpt-4o-mini-2024-07-18",
    "service_tier": "flex", "system_fingerprint": None,
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": "Reconciled.", "refusal": None, "annotations": []}}],
    "usage": {"prompt_tokens": 10000, "completion_tokens": 2000, "total_tokens": 12000,
              "prompt_tokens_details": {"cached_tokens": 4000, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 1500, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
}

# A line of a Batch API output file (`/v1/chat/completions` requests): the body is a chat completion.
OPENAI_BATCH_OUTPUT_LINE = {
    "id": "batch_req_6812a1", "custom_id": "ticket-77", "error": None,
    "response": {"status_code": 200, "request_id": "req_9f1c", "body": {
        "id": "chatcmpl-BatchB0dy", "object": "chat.completion", "created": 1764000200,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default", "system_fingerprint": "fp_batch",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "Closed.", "refusal": None, "annotations": []}}],
        "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 100_000, "total_tokens": 1_100_000,
                  "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}}},
}
