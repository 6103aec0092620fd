"""Where the LangChain middleware keep originals: a LangGraph store, or this process's memory.

A :class:`LangGraphOriginalStore` puts originals in a LangGraph ``BaseStore`` (the agent's own,
``create_agent(..., store=...)``, unless another is given), so they last as long as that store
does and every worker sees them; without one, an
:class:`~tokenlean.store.InMemoryOriginalStore` keeps them in this process. :class:`StoreChoice`
is that rule in one place. Both follow the core's :class:`~tokenlean.store.OriginalStore`
protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore, PutOp

from tokenlean import checks
from tokenlean.store import STORE_NAMESPACE, InMemoryOriginalStore, Original, OriginalStore

__all__ = ["LangGraphOriginalStore", "StoreChoice", "as_original_store"]


class LangGraphOriginalStore:
    """Originals in a LangGraph ``BaseStore`` under ``(*namespace, scope)``, keyed by handle.

    They last as long as the store does (a ``SqliteStore`` or ``PostgresStore`` survives
    restarts) and every worker on the same store sees them.
    """

    def __init__(self, store: BaseStore, *, namespace: tuple[str, ...] = STORE_NAMESPACE) -> None:
        methods = ("put", "get", "aput", "aget")
        missing = [m for m in methods if not callable(getattr(store, m, None))]
        if missing:
            raise checks.ArgumentTypeError(
                "store must be a LangGraph BaseStore (put, get, aput, aget by namespace and "
                f"key), got {type(store).__name__} without {', '.join(missing)}"
            )
        if (
            not isinstance(namespace, (tuple, list))
            or not namespace
            or not all(isinstance(part, str) and _is_label(part) for part in namespace)
            or namespace[0] == "langgraph"
        ):
            raise ValueError(
                "namespace must be non-empty strings without '.' or NUL, not under "
                f"'langgraph' (LangGraph's own), got {namespace!r}"
            )
        self.store = store
        self.namespace = tuple(namespace)

    def _ns(self, scope: str) -> tuple[str, ...]:
        # Store labels may not contain "." or NUL (nor be empty): escape injectively.
        label = scope.replace("%", "%25").replace(".", "%2E").replace("\0", "%00")
        return (*self.namespace, label or "%")

    def put(self, scope: str, original: Original) -> None:
        self.store.put(self._ns(scope), original.handle, original.to_dict(), index=False)

    def put_many(self, scope: str, originals: Sequence[Original]) -> None:
        """``originals`` in one ``batch`` of the store (one transaction of an SQL store, one
        round trip to a server's, or to the event loop of an async store a sync agent uses);
        one ``put`` each when the store's class has a ``put`` of its own that LangGraph did
        not write (a subclass that audits or encrypts what it keeps)."""
        if not _batch_is_put(type(self.store).put, BaseStore.put):
            for original in originals:
                self.put(scope, original)
        elif originals:
            self.store.batch(self._puts(scope, originals))

    async def aput_many(self, scope: str, originals: Sequence[Original]) -> None:
        """:meth:`put_many` through the store's ``abatch``. A store class with its own ``aput``
        gets them all awaited at once: an ``AsyncSqliteStore`` or ``AsyncPostgresStore``
        sends what is awaited together in one batch of its own."""
        if type(self.store).aput is not BaseStore.aput:
            await asyncio.gather(*(self.aput(scope, original) for original in originals))
        elif originals:
            await self.store.abatch(self._puts(scope, originals))

    def _puts(self, scope: str, originals: Sequence[Original]) -> list[PutOp]:
        """What ``put`` would send for each: the store's default TTL, as ``put`` gives an item
        it names none for, and labels that already pass its checks (see ``__init__``)."""
        ttl = (self.store.ttl_config or {}).get("default_ttl")
        namespace = self._ns(scope)
        return [PutOp(namespace, o.handle, o.to_dict(), index=False, ttl=ttl) for o in originals]

    def get(self, scope: str, handle: str) -> Original | None:
        item = self.store.get(self._ns(scope), handle)
        return Original.from_dict(item.value) if item is not None else None

    async def aput(self, scope: str, original: Original) -> None:
        await self.store.aput(self._ns(scope), original.handle, original.to_dict(), index=False)

    async def aget(self, scope: str, handle: str) -> Original | None:
        item = await self.store.aget(self._ns(scope), handle)
        return Original.from_dict(item.value) if item is not None else None


def _batch_is_put(method: Callable[..., object], base: Callable[..., object]) -> bool:
    """Whether a store's ``method`` does what a ``batch`` of its op does: the base class's, or
    one of LangGraph's own stores (an async store's sync ``put`` only carries the op to its
    event loop; a batch carries them all at once)."""
    return method is base or getattr(method, "__module__", "").startswith("langgraph.")


def _is_label(part: str) -> bool:
    """A label LangGraph's stores take: not empty, without "." and NUL."""
    return bool(part) and "." not in part and "\0" not in part


def as_original_store(value: object, *, name: str = "store") -> OriginalStore:
    """``value`` as an :class:`OriginalStore`: a LangGraph ``BaseStore`` is wrapped in a
    :class:`LangGraphOriginalStore`; anything else must have ``put``/``get``/``aput``/``aget``
    by scope and original (else ``TypeError`` naming ``name``)."""
    if isinstance(value, BaseStore):
        return LangGraphOriginalStore(value)
    if not isinstance(value, OriginalStore) or isinstance(value, (str, bytes, Mapping)):
        raise checks.ArgumentTypeError(
            f"{name} must be an OriginalStore (put/get/aput/aget by scope and Original, e.g. "
            f"InMemoryOriginalStore) or a LangGraph BaseStore, got {type(value).__name__}"
        )
    return value


class StoreChoice:
    """Where a middleware keeps originals, and where ``read_original`` looks for them.

    The store the user gave, when one was given; else the agent's own LangGraph store
    (``create_agent(..., store=...)``, read from the runtime on every call) under
    :data:`STORE_NAMESPACE`, so originals survive whatever the agent's store survives; else
    :attr:`memory`, this process's :class:`InMemoryOriginalStore`. Middleware that share one
    choice (as :func:`~tokenlean.langchain.recommended_middleware` does) share their originals,
    and the one ``read_original`` tool of each name that reads them (:meth:`tool`).
    """

    def __init__(self, given: object = None) -> None:
        self.given: OriginalStore | None = (
            None if given is None else as_original_store(given, name="store")
        )
        self.memory = InMemoryOriginalStore()
        self._wrapped: tuple[object, LangGraphOriginalStore] | None = None
        self._tools: dict[str, BaseTool] = {}

    @classmethod
    def of(cls, store: object) -> StoreChoice:
        """``store`` itself when it is a choice already, else a choice around it."""
        return store if isinstance(store, StoreChoice) else cls(store)

    @property
    def default(self) -> OriginalStore:
        """The store used when the agent has none: the one given, else :attr:`memory`."""
        return self.given if self.given is not None else self.memory

    def pick(self, agent_store: object | None) -> OriginalStore:
        """The store for a call of an agent whose own store is ``agent_store`` (or ``None``)."""
        if self.given is not None or agent_store is None:
            return self.default
        wrapped = self._wrapped
        if wrapped is None or wrapped[0] is not agent_store:
            wrapped = (agent_store, LangGraphOriginalStore(agent_store))  # type: ignore[arg-type]
            self._wrapped = wrapped
        return wrapped[1]

    def tool(self, name: str, make: Callable[[], BaseTool]) -> BaseTool:
        """The one tool named ``name`` that reads this choice, made by ``make`` when first asked
        for: several middleware sharing the choice give an agent one tool."""
        tool = self._tools.get(name)
        if tool is None:
            # setdefault is atomic: when two threads make one at once, the first kept wins
            tool = self._tools.setdefault(name, make())
        return tool
