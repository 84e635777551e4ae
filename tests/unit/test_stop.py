"""What the stop of an overdue execution uses of Playwright beneath its public API: an upgrade
that moves it fails here, not by a hang in the bounds tests."""

from __future__ import annotations

import inspect

from playwright._impl import _impl_to_api_mapping, _sync_base, cdp_session, download, page


def test_a_sync_object_keeps_the_event_loop_its_calls_wait_in_and_its_asynchronous_twin() -> None:
    assert "self._loop" in inspect.getsource(_sync_base.SyncBase.__init__)
    assert "self._impl_obj = impl_obj" in inspect.getsource(_impl_to_api_mapping)


def test_a_page_closes_with_a_reason_and_a_download_cancels() -> None:
    parameters = inspect.signature(page.Page.close).parameters
    assert {"run_before_unload", "reason"} <= set(parameters)
    assert inspect.iscoroutinefunction(page.Page.close)
    assert inspect.iscoroutinefunction(download.Download.cancel)


def test_a_devtools_session_sends_a_command_with_its_parameters_and_a_timeout() -> None:
    """The stop of a read of the product's own sends Runtime.terminateExecution this way."""
    parameters = list(inspect.signature(cdp_session.CDPSession.send).parameters)
    assert parameters == ["self", "method", "params", "timeout"]
    assert inspect.iscoroutinefunction(cdp_session.CDPSession.send)
