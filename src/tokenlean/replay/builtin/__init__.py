"""Strategy registrations for tokenlean's own middleware, one module per middleware.

Each module calls :func:`tokenlean.replay._strategies.register`; the registry imports them lazily.
"""

__all__: list[str] = []  # each module registers its strategies when imported
