"""Store and ingest behaviour lives in tests/contract/, run on every backend (SQLite and PostgreSQL).

`CountingEmbedder` stays here because other test modules import it from this one.
"""

from threadkeep.embed import HashEmbedder


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.passages = 0

    def embed_passages(self, texts):
        self.passages += len(texts)
        return super().embed_passages(texts)
