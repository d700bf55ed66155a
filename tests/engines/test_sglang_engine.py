"""SGLangEngine against `python -m turngym.engines.serve` on loopback: field names, logprobs, errors, retries."""

import asyncio

import httpx
import pytest

from turngym.engines.engine import EngineError, EngineRequestError
from turngym.engines.sglang_engine import SGLangEngine, to_sglang_sampling


def _prompt(tokenizer):
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": "Pick a number."}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )


def test_native_generate_fields(served_url, tokenizer):
    prompt = _prompt(tokenizer)
    body = {
        "input_ids": prompt,
        "sampling_params": {"max_new_tokens": 5, "temperature": 0},
        "return_logprob": True,
        "rid": "abc",
    }
    r = httpx.post(served_url + "/generate", json=body, timeout=60)
    assert r.status_code == 200
    data = r.json()
    assert set(data) == {"text", "output_ids", "meta_info"}
    meta = data["meta_info"]
    assert meta["id"] == "abc" and meta["finish_reason"]["type"] in ("stop", "length")
    assert [e[1] for e in meta["output_token_logprobs"]] == data["output_ids"]
    assert all(e[2] is None and e[0] <= 0 for e in meta["output_token_logprobs"])


def test_unknown_sampling_key_is_http_400(served_url, tokenizer):
    body = {"input_ids": _prompt(tokenizer), "sampling_params": {"max_tokens": 5}}
    r = httpx.post(served_url + "/generate", json=body, timeout=60)
    assert r.status_code == 400 and "max_tokens" in r.text


def test_health_endpoints(served_url):
    for path in ("/health", "/ready", "/health_generate"):
        assert httpx.get(served_url + path, timeout=60).status_code == 200


def test_client_matches_in_process_engine(served_url, tokenizer, hf_engine):
    """The same greedy request through HTTP and in-process gives the same ids and logprobs."""
    prompt = _prompt(tokenizer)
    sp = {"temperature": 0, "max_tokens": 8}

    async def run():
        client = SGLangEngine(served_url)
        try:
            remote = await asyncio.gather(
                *[client.generate(f"r{i}", prompt_ids=prompt, sampling_params=sp) for i in range(4)]
            )
        finally:
            await client.aclose()
        local = await hf_engine.generate("l", prompt_ids=prompt, sampling_params=sp)
        return remote, local

    remote, local = asyncio.run(run())
    for out in remote:
        assert out.token_ids == local.token_ids
        assert out.log_probs == pytest.approx(local.log_probs, abs=1e-4)
        assert out.stop_reason == local.stop_reason


def test_client_renames_verl_params_and_seed_reproduces(served_url, tokenizer):
    prompt = _prompt(tokenizer)
    sp = {
        "temperature": 1.0,
        "max_tokens": 8,
        "seed": 11,
        "logprobs": True,
        "top_k": -1,
        "repetition_penalty": 1.0,
    }

    async def run():
        client = SGLangEngine(served_url)
        try:
            return [await client.generate("x", prompt_ids=prompt, sampling_params=sp) for _ in range(2)]
        finally:
            await client.aclose()

    a, b = asyncio.run(run())
    assert a.token_ids == b.token_ids and len(a.token_ids) <= 8


def test_http_errors_are_not_retried(served_url):
    async def run():
        client = SGLangEngine(served_url, retries=3, backoff=0.01)
        try:
            with pytest.raises(EngineRequestError, match="HTTP 400"):
                await client.generate("bad", prompt_ids=[], sampling_params={})
            return client.transport_retries
        finally:
            await client.aclose()

    assert asyncio.run(run()) == 0


def test_transport_errors_are_retried_then_reported(unused_port):
    url = f"http://127.0.0.1:{unused_port}"  # nothing listens here

    async def run():
        client = SGLangEngine(url, retries=2, backoff=0.01, connect_timeout=1)
        try:
            with pytest.raises(EngineError, match="unreachable after 3 attempts"):
                await client.generate("x", prompt_ids=[1, 2], sampling_params={})
            assert not await client.ready()
            return client.transport_retries
        finally:
            await client.aclose()

    assert asyncio.run(run()) == 2


def test_sampling_translation():
    out = to_sglang_sampling({"max_tokens": 3, "seed": 2, "logprobs": True, "top_k": 0, "temperature": None})
    assert out == {"max_new_tokens": 3, "sampling_seed": 2, "top_k": -1, "skip_special_tokens": False}


def test_errors_have_the_shared_shape(served_url, tokenizer):
    body = {"input_ids": _prompt(tokenizer), "sampling_params": {"max_tokens": 5}}
    error = httpx.post(served_url + "/generate", json=body, timeout=60).json()["error"]
    assert error["code"] == "bad_request" and "max_tokens" in error["message"]
    for content, needle in [(b"{not json", "not JSON"), (b"[1]", "JSON object"), (b"{}", "input_ids")]:
        r = httpx.post(served_url + "/generate", content=content, timeout=60)
        assert r.status_code == 400 and needle in r.json()["error"]["message"], r.text
    r = httpx.get(served_url + "/nowhere", timeout=60)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_token_and_gate_on_the_model_server(model_path, tokenizer):
    """turngym.engines.serve's app with a token and one generation at a time, none waiting, on a real uvicorn."""
    import threading

    import uvicorn

    from turngym.engines.hf_engine import HFEngine
    from turngym.engines.serve import create_app
    from turngym.serving.loopback_server import free_port

    app = create_app(HFEngine(model_path, seed=0), token="s3cret", max_concurrency=1, max_queue=0)
    gate = app.state.server.gate
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    prompt = _prompt(tokenizer)

    async def run():
        while not await SGLangEngine(url).ready():  # /ready is open without the token
            await asyncio.sleep(0.05)
        impatient = SGLangEngine(url, api_key="s3cret", retries=0, busy_wait_s=0)
        patient = SGLangEngine(url, api_key="s3cret", retries=0)
        try:
            with pytest.raises(EngineRequestError, match="HTTP 401"):
                await SGLangEngine(url, retries=0).generate("x", prompt_ids=prompt, sampling_params={})
            long = {"max_tokens": 400, "temperature": 1.0, "ignore_eos": True}
            first = asyncio.ensure_future(patient.generate("a", prompt_ids=prompt, sampling_params=long))
            while gate.running < 1 and not first.done():
                await asyncio.sleep(0.002)
            with pytest.raises(EngineRequestError, match="HTTP 429.*overloaded"):
                await impatient.generate("b", prompt_ids=prompt, sampling_params={"max_tokens": 2})
            # A patient client waits out the 429 (Retry-After) and gets its answer once the slot frees.
            waited = await patient.generate("c", prompt_ids=prompt, sampling_params={"max_tokens": 2})
            return await first, waited, patient.busy_retries
        finally:
            await impatient.aclose()
            await patient.aclose()

    try:
        out, waited, busy_retries = asyncio.run(run())
        assert len(out.token_ids) == 400 and len(waited.token_ids) == 2 and busy_retries >= 1
    finally:
        server.should_exit = True
        thread.join(10)
    assert (gate.admitted, gate.running) == (0, 0)
