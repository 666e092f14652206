-- One scope's retry quota bucket, with quota.Bucket's arithmetic (see
-- quota.go). Lua numbers are doubles: they are stored with %.17g, which
-- round-trips, and returned as strings, since Redis truncates a Lua number
-- in a reply to an integer.
--
-- KEYS[1]  the bucket: a hash {tokens, last}; no key means a full bucket
-- ARGV[1]  now, in microseconds; empty for the server's clock (TIME)
-- ARGV[2]  capacity, tokens
-- ARGV[3]  refill, tokens per second
-- ARGV[4]  cost of the retry to pay, tokens; 0 to add only
-- ARGV[5]  "1": take the cost when short (Wait mode) if refill > 0
-- ARGV[6]  tokens to add first: successes and refunds the replica owes
-- ARGV[7]  TTL of the key, milliseconds
-- ARGV[8]  tokens to take next, never below an empty bucket: the retries
--          the replica took from its own view while Redis did not answer
--
-- Returns {ok, tokens, full}: ok 1 if the cost was taken (always, for a
-- cost of 0); tokens, a string, the level after; full 1 if the bucket is
-- full, and so its key deleted.
local key = KEYS[1]
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local capacity = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local waitMode = ARGV[5] == '1'
local add = tonumber(ARGV[6])
local ttl = tonumber(ARGV[7])
local debt = tonumber(ARGV[8])

local fmt = '%.17g'
local v = redis.call('HMGET', key, 'tokens', 'last')
local tokens, last = tonumber(v[1]), tonumber(v[2])

if not tokens or not last then
  -- A full bucket: what is owed adds nothing to it.
  if cost == 0 and debt == 0 then
    return {1, string.format(fmt, capacity), 1}
  end
  tokens, last = capacity, now
end

-- Refill up to now; a clock behind the last refill adds nothing and leaves
-- last as it is, so no interval is paid twice.
if now > last then
  if rate > 0 then
    tokens = math.min(tokens + (now - last) / 1000000 * rate, capacity)
  end
  last = now
end
if add > 0 then
  tokens = math.min(tokens + add, capacity)
end
-- A debt empties the bucket at most: it stands for retries already made,
-- not for a deficit to wait out.
if debt > 0 then
  tokens = math.max(tokens - debt, math.min(tokens, 0))
end

local ok = 1
if cost > 0 then
  if tokens >= cost or (waitMode and rate > 0) then
    tokens = tokens - cost
  else
    ok = 0
  end
end

if tokens >= capacity then
  redis.call('DEL', key)
  return {ok, string.format(fmt, capacity), 1}
end
redis.call('HSET', key, 'tokens', string.format(fmt, tokens), 'last', string.format(fmt, last))
redis.call('PEXPIRE', key, ttl)
return {ok, string.format(fmt, tokens), 0}
