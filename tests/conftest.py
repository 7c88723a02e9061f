import os

# models are never fetched from a hub in tests
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# the machine embedding cache (and the converted onnx model) of a test run lives in its own folder,
# never in the user's ~/.cache/hanrag
if "HANRAG_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["HANRAG_CACHE_DIR"] = _TEST_CACHE = tempfile.mkdtemp(prefix="hanrag-test-cache-")

    def pytest_sessionfinish(session, exitstatus):
        import shutil

        shutil.rmtree(_TEST_CACHE, ignore_errors=True)
