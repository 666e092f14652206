-- One scope's circuit, shared by a fleet (see breaker.go): whether it is
-- open and until when, and the probe lease, which one replica at a time
-- holds to send the probe once the open time is over. Times are
-- microseconds of the script's clock; the reply gives them relative to it,
-- so that replicas whose clocks disagree read the same instants.
--
-- KEYS[1]  the circuit: a hash; no key means closed, generation 0
-- ARGV[1]  op: "read", "open" or "settle"
-- ARGV[2]  now, in microseconds; empty for the server's clock (TIME)
-- ARGV[3]  TTL of the key, milliseconds
--
-- op "read": the circuit as it is; and the probe lease is taken, if asked
--   for, the circuit open, its open time over and no unexpired lease held.
--   ARGV[4]  the lease, µs; 0 not to take it
-- op "open": the replica's own circuit opened; the fleet's opens unless it
--   is open already or has changed since the replica last heard of it.
--   ARGV[4]  the generation the replica knows
--   ARGV[5]  how long the replica's circuit stays open, µs
--   ARGV[6]  its open time before jitter, µs
--   ARGV[7]  the consecutive failures that opened it
--   ARGV[8]  the last failure, as text
--   ARGV[9]  "1" if the last failure was a deadline's
-- op "settle": a probe's outcome, counted if the circuit is still in the
--   generation the probe was let through in; the lease is released if the
--   probe still holds it.
--   ARGV[4]  the probe's generation
--   ARGV[5]  the probe's lease token
--   ARGV[6]  "ok" (closes), "fail" (opens again, for twice as long) or
--            "drop" (releases the lease only)
--   ARGV[7]  the first opening's open time, µs (OpenFor)
--   ARGV[8]  the cap on the open time, µs (MaxOpenFor)
--   ARGV[9]  the jitter factor of the new open time, in [0.9, 1.1)
--   ARGV[10] the failure, as text
--   ARGV[11] "1" if the failure was a deadline's
--
-- Returns {gen, open, left, ago, for, opens, fails, last, timeout, leased,
-- token}: the generation; 1 if open; µs until the open time ends (negative
-- when over, 0 when closed); µs since the phase began; the open time
-- before jitter, µs (0 when closed); the openings so far; the failures
-- that opened it; the last failure and 1 if it was a deadline's; 1 if a
-- lease is held and unexpired; the token of the lease this call took, or 0.
local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local ttl = tonumber(ARGV[3])

local f = redis.call('HMGET', key, 'gen', 'open', 'until', 'since', 'for', 'opens', 'fails',
  'last', 'lto', 'lh', 'le', 'seq')
local gen = tonumber(f[1]) or 0
local open = f[2] == '1'
local untl = tonumber(f[3]) or 0
local since = tonumber(f[4]) or now
local openFor = tonumber(f[5]) or 0
local opens = tonumber(f[6]) or 0
local fails = tonumber(f[7]) or 0
local last = f[8] or ''
local lto = f[9] or '0'
local holder = tonumber(f[10]) or 0
local leaseEnd = tonumber(f[11]) or 0
local seq = tonumber(f[12]) or 0
local token = 0
local wrote = false

-- Numbers are written with %.17g: Redis would write a Lua number with 14
-- digits, too few for microseconds since 1970.
local function num(x)
  return string.format('%.17g', x)
end

if holder ~= 0 and leaseEnd <= now then
  holder = 0 -- the lease expired: its holder died, or forgot its probe
end

if op == 'open' then
  if not open and gen == tonumber(ARGV[4]) then
    gen = gen + 1
    open = true
    untl = now + math.max(tonumber(ARGV[5]), 0)
    since = now
    openFor = tonumber(ARGV[6])
    opens = opens + 1
    fails = tonumber(ARGV[7])
    last, lto = ARGV[8], ARGV[9]
    holder = 0
    wrote = true
  end
elseif op == 'read' then
  local lease = tonumber(ARGV[4])
  if lease > 0 and open and now >= untl and holder == 0 then
    seq = seq + 1
    holder, leaseEnd, token = seq, now + lease, seq
    wrote = true
  end
elseif op == 'settle' then
  local mine = holder ~= 0 and holder == tonumber(ARGV[5])
  local verdict = ARGV[6]
  if open and gen == tonumber(ARGV[4]) and verdict ~= 'drop' then
    -- The probe's outcome counts even if its lease expired meanwhile: a
    -- success is evidence that the server answers, as in process.
    gen = gen + 1
    since = now
    holder = 0
    if verdict == 'ok' then
      open, untl, openFor = false, 0, 0
    else
      local base, cap = tonumber(ARGV[7]), tonumber(ARGV[8])
      if openFor < cap / 2 then
        openFor = math.max(2 * openFor, base)
      else
        openFor = cap
      end
      untl = now + math.floor(openFor * tonumber(ARGV[9]))
      opens = opens + 1
      last, lto = ARGV[10], ARGV[11]
    end
    wrote = true
  elseif mine then
    holder = 0
    wrote = true
  end
end

if wrote then
  local fields = {'gen', num(gen), 'open', open and '1' or '0', 'until', num(untl),
    'since', num(since), 'for', num(openFor), 'opens', num(opens), 'fails', num(fails),
    'last', last, 'lto', lto, 'seq', num(seq)}
  if holder ~= 0 then
    table.insert(fields, 'lh')
    table.insert(fields, num(holder))
    table.insert(fields, 'le')
    table.insert(fields, num(leaseEnd))
  else
    redis.call('HDEL', key, 'lh', 'le')
  end
  redis.call('HSET', key, unpack(fields))
  redis.call('PEXPIRE', key, ttl)
end

local left = 0
if open then
  left = untl - now
end
return {gen, open and 1 or 0, left, now - since, openFor, opens, fails, last,
  lto == '1' and 1 or 0, holder ~= 0 and 1 or 0, token}
