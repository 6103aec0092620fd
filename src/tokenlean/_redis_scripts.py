"""The Lua scripts of :class:`~tokenlean.redis_store.RedisOriginalStore`.

Each runs atomically on the server, so processes on any number of machines keep one byte total
and one order of use without coordinating, and every "now" is the server's clock (``TIME``),
not each machine's. Keys, with the store's prefix ``P``: ``P o:<member>`` holds an original (a
hash: ``text``, the writer's age limit ``ttl`` and, when known, ``tool`` and ``tool_call_id``)
and expires after that limit; ``P used`` orders members by last use (a sorted set, the score
the time); ``P sizes`` holds each member's size in bytes; ``P bytes`` their total; ``P evicted``
the members the sweeps deleted (when), so a reader can say "pruned" rather than "unknown";
``P floods`` how many sweeps deleted originals used within the grace.
"""

from __future__ import annotations

__all__ = ["GET", "PUT", "SWEEP", "TOUCH"]

_NOW = "local t = redis.call('TIME')\nlocal now = t[1] + t[2] / 1000000\n"

#: KEYS: original, used. ARGV: member, ttl. Marks the original used; 0 when there is none.
TOUCH = (
    _NOW
    + """
if redis.call('EXPIRE', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], now, ARGV[1])
return 1
"""
)

#: KEYS: original, used. ARGV: member, ttl. The original's fields (empty: none), marked used;
#: its TTL is the age limit of the process that wrote it (a reader such as ``tokenlean mcp``
#: does not know it), else ``ttl``.
GET = (
    _NOW
    + """
local found = redis.call('HGETALL', KEYS[1])
if #found == 0 then return found end
redis.call('EXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'ttl') or ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
return found
"""
)

#: KEYS: original, used, sizes, bytes, evicted. ARGV: member, ttl, size, then field, value, ...
#: Writes the original unless another process did meanwhile; returns the total in bytes.
PUT = (
    _NOW
    + """
if redis.call('EXPIRE', KEYS[1], ARGV[2]) == 0 then
  local stale = redis.call('HGET', KEYS[3], ARGV[1])  -- it expired: its size is still counted
  if stale then redis.call('DECRBY', KEYS[4], stale) end
  redis.call('HSET', KEYS[1], unpack(ARGV, 4))
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
  redis.call('INCRBY', KEYS[4], ARGV[3])
  redis.call('ZREM', KEYS[5], ARGV[1])
end
redis.call('ZADD', KEYS[2], now, ARGV[1])
return tonumber(redis.call('GET', KEYS[4]) or '0')
"""
)

#: KEYS: used, sizes, bytes, evicted, floods. ARGV: originals' key prefix, max_bytes, max_age,
#: grace, dry ('1': count only), how many to look at (0: all), evicted members remembered, the
#: hard cap in bytes. Deletes, least recently used first, what is past the age limit, then what
#: exceeds the size cap, but not what was used within the grace while the total is within the
#: hard cap (past it, a flood of new originals, those go too, and ``floods`` counts the sweep:
#: a process that skips putting what it put lately reads it). Returns deleted count and bytes,
#: kept count and bytes, and that count. The entries are read a page at a time, the first of
#: 16, each next one twice as large up to 256: a store over its cap sweeps at every put, and most
#: of those sweeps stop at the first entry (reading 1,000 at once made such a put cost five times
#: a plain one).
SWEEP = (
    _NOW
    + """
local max_bytes, max_age, grace = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local hard = tonumber(ARGV[8])
local dry = ARGV[5] == '1'
local total = tonumber(redis.call('GET', KEYS[3]) or '0')
local limit = tonumber(ARGV[6])
local gone, freed, looked, start, page, done = 0, 0, 0, 0, 16, false
local flooded = false
while not done and (limit == 0 or looked < limit) do
  local n = page
  if limit > 0 and limit - looked < n then n = limit - looked end
  local entries = redis.call('ZRANGE', KEYS[1], start, start + n - 1, 'WITHSCORES')
  done = #entries < 2 * n  -- the last page
  for i = 1, #entries, 2 do
    local member, idle = entries[i], now - tonumber(entries[i + 1])
    if idle <= max_age and (total <= max_bytes or (idle < grace and total <= hard)) then
      done = true
      break
    end
    local size = tonumber(redis.call('HGET', KEYS[2], member) or '0')
    total, gone, freed = total - size, gone + 1, freed + size
    if not dry then
      if idle < grace then flooded = true end
      redis.call('DEL', ARGV[1] .. member)
      redis.call('HDEL', KEYS[2], member)
      redis.call('ZREM', KEYS[1], member)
      redis.call('DECRBY', KEYS[3], size)
      redis.call('ZADD', KEYS[4], now, member)
    end
  end
  looked = looked + n
  if dry then start = start + n end  -- a deleted page left the set: the next one is at 0
  if page < 256 then page = page * 2 end
end
if not dry then redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[7]) - 1) end
if flooded then redis.call('INCR', KEYS[5]) end
local kept = redis.call('ZCARD', KEYS[1])
if dry then kept = kept - gone end
return {gone, freed, kept, total, tonumber(redis.call('GET', KEYS[5]) or '0')}
"""
)
