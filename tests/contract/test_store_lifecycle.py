"""What every backend does alike with a store's life: opening one that is not there, listing and
forgetting conversations, and knowing a document again wherever it was ingested from."""

from __future__ import annotations

import pytest

from threadkeep.store import StoreNotFound, open_store


def test_opening_without_create_finds_no_store(store_location: str) -> None:
    with pytest.raises(StoreNotFound) as raised:
        open_store(store_location, create=False)
    assert "there is no store at" in str(raised.value)
    open_store(store_location).close()
    open_store(store_location, create=False).close()
