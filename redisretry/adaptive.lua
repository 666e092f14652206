-- One scope's shared adaptive rate limiter (see adaptive.go and
-- docs/redis.md): the fleet's measured send rate, the CUBIC curve of its
-- fill rate and a GCRA queue of send slots; and, through the functions of
-- published.lua, which adaptive_script.go puts before this file, the
-- pacing by the quota the scope's server publishes. Lua numbers are
-- doubles: they are stored with %.17g, which round-trips, and returned as
-- strings, since Redis truncates a Lua number in a reply to an integer.
-- Times are microseconds of the server's clock (TIME) unless the caller
-- passes its own.
--
-- KEYS[1]  the scope's hash
-- KEYS[2]  the scope's published quota (published.lua)
-- ARGV[1]  "reserve", "throttle" or "cancel"
-- ARGV[2]  now, in microseconds; empty for the server's clock
-- ARGV[3]  beta, ARGV[4] scale (C), ARGV[5] least fill rate,
-- ARGV[6]  smoothing, ARGV[7] additive (0 for none)
-- ARGV[8]  TTL of the keys, milliseconds
-- ARGV[9]  sends the replica made without asking (before the scope was
--          limited), to count in the measured rate
-- reserve:  ARGV[10] the longest wait to accept, microseconds; -1: any;
--           ARGV[11] how many slots to take, one after the other: the
--           replica's Reserve calls that came together
-- throttle: ARGV[10] the decrease generation the replica knew of;
--           ARGV[11] "1" if the throttled request was sent before the
--           replica knew of it
-- cancel:   ARGV[10] the slot of the reservation given up; ARGV[11]
--           unused: a place of the published quota's queue is given back
--           whenever the quota paces the scope (pubGiveBack)
-- ARGV[12] k, the published quotas the replica has heard of since its last
--          call, then k pairs from ARGV[13]: remaining, and the µs from
--          now to the reset; applied in order, before the op
--
-- Returns {enabled, gen, taken, slot, fill, measured, lastMax,
-- lastThrottle, burst, tat, now, interval, paced, remaining, rate, reset,
-- waits}: enabled and paced 0 or 1, gen and taken integers, waits a list,
-- the rest strings. taken is the number of slots handed out, fewer than
-- asked when the next would wait longer than ARGV[10]: nothing is taken
-- from there on. slot is the first slot of the CUBIC queue
-- (handed out or not), interval the time between two of its slots (0
-- unless limited): slot i is slot + i*interval, the last one taken is tat.
-- paced says whether the published quota paces the scope; remaining, rate
-- and reset are its. waits has, while it paces, the wait in the published
-- queue of each slot taken, and of the first one refused if any: each
-- slot waits the longer of its two waits.
local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local beta, scale, minFill = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local smoothing, additive = tonumber(ARGV[6]), tonumber(ARGV[7])
local ttl, sends = tonumber(ARGV[8]), tonumber(ARGV[9])

local fmt = '%.17g'
local function f17(x) return string.format(fmt, x) end
local BUCKET = 500000   -- measured rate: half-second buckets
local SPAN_MIN = 100000 -- cold start: the least span a count is divided by
local HOLD_MAX = 1000000 -- a hold ends this long after its decrease at the latest
-- While no bucket has closed, the measured rate is a rough estimate from
-- the sends reported so far, and a decrease goes at least to this factor
-- (ratelimit.DefaultBeta): a gentle one would take many throttles to come
-- down from an estimate inflated by the unlimited start.
local COLD_BETA = 0.7
local WINDOW = 0.1      -- seconds of the rate the queue lets out at once
local RATE_CAP = 2      -- the rate never exceeds this multiple of the measured one

local f = redis.call('HMGET', key, 'en', 'gen', 'max', 'thr', 'm', 'cnt', 'bkt', 'org', 'cl', 'tat', 'ptat', 'hend', 'bt', 'ds', 'dt')
local function num(i, default)
  local x = tonumber(f[i])
  if x == nil then return default end
  return x
end
local en = f[1] == '1'
local gen = num(2, 0)
local lastMax = num(3, 0)
local thr = num(4, now)
local m = num(5, 0)
local cnt = num(6, 0)
local bkt = num(7, math.floor(now / BUCKET) * BUCKET)
local org = num(8, now)
local closed = f[9] == '1'
local tat = num(10, now)
local ptat = num(11, tat)
local hend = num(12, 0)
local bt = num(13, beta)
local ds = num(14, 0)
local dt = num(15, 0)

local pub = pubLoad(KEYS[2])

if op == 'cancel' then
  -- Best effort: only the latest slot can be given back.
  if en and f[10] and tonumber(f[10]) == tonumber(ARGV[10]) then
    redis.call('HSET', key, 'tat', string.format(fmt, ptat))
  end
  pubGiveBack(pub, now)
  pubSave(pub, ttl)
  return {}
end

for i = 1, tonumber(ARGV[12]) or 0 do
  pubUpdate(pub, now, tonumber(ARGV[11 + 2 * i]), tonumber(ARGV[12 + 2 * i]))
end

-- The measured send rate, requests per second: the smoothed rate of the
-- closed buckets or, before one has closed, the count so far over the time
-- since the first call, at least SPAN_MIN.
local function measured()
  if closed then return m end
  return cnt / (math.max(now - org, SPAN_MIN) / 1000000)
end

-- measure counts n sends at now, and folds the count into the measured
-- rate when now is in a later bucket than the current one.
local function measure(n)
  if n <= 0 then return end
  cnt, ds = cnt + n, ds + n
  local b = math.floor(now / BUCKET) * BUCKET
  if b <= bkt then return end
  local prev = measured()
  m = smoothing * cnt / ((b - bkt) / 1000000) + (1 - smoothing) * prev
  cnt, bkt, closed = 0, b, true
end

-- rate is the CUBIC curve at now, scale*(t - K)^3 + lastMax with t the
-- seconds since the last throttle and K = cbrt(lastMax*(1-beta)/scale),
-- or the additive line beta*lastMax + additive*t if higher, capped at
-- RATE_CAP times the measured rate mm.
local function rate(mm)
  local t = (now - thr) / 1000000
  local d = t - (lastMax * (1 - bt) / scale) ^ (1 / 3)
  local r = scale * d * d * d + lastMax
  if additive > 0 then
    r = math.max(r, beta * lastMax + additive * t)
  end
  return math.min(r, RATE_CAP * mm)
end

measure(sends)
local taken, slot, interval = 1, 0, 0
local waits = {}

if op == 'reserve' then
  local n = tonumber(ARGV[11]) or 1
  local maxWait = tonumber(ARGV[10])
  local paced = pubPacing(pub, now)
  if en then
    local r = rate(measured())
    local fill = math.max(r, minFill)
    local burst = math.max(r * WINDOW, 1)
    interval = 1000000 / fill
    -- The GCRA queue: the next slot is an interval after the last one
    -- handed out, or after now less a burst's worth if that is later;
    -- the slots after it in the same call, an interval apart, are those
    -- that as many calls at this instant would take.
    slot = math.max(tat, now - burst * interval) + interval
  end
  if en or paced then
    -- Each slot waits the longer of the CUBIC queue's wait and the
    -- published quota's, and takes a place in both.
    local s = slot
    taken = 0
    while taken < n do
      local w = pubWait(pub, now)
      if paced then waits[#waits + 1] = f17(w) end
      if en then w = math.max(w, s - now) end
      if maxWait >= 0 and w > maxWait then break end
      if en then ptat, tat, s = tat, s, s + interval end
      pubTake(pub, now)
      taken = taken + 1
    end
  else
    taken = n
  end
  measure(taken)
elseif op == 'throttle' then
  local mm = measured()
  local known, old = tonumber(ARGV[10]), ARGV[11] == '1'
  dt = dt + 1
  if en and now < hend and (known < gen or (known == gen and old)) then
    -- A throttle of a request sent before the last decrease took effect
    -- says nothing new: restart the curve at the decreased rate. The first
    -- decrease came before most replicas had reported their sends: the
    -- first throttle each of them reports brings its count in, and while
    -- no bucket has closed the plateau rises to the measured rate.
    if not closed and gen == 1 and known < gen then
      lastMax = math.max(lastMax, mm)
    end
    thr = now
  else
    local inUse = mm
    if en then
      inUse = math.min(mm, math.max(rate(mm), minFill))
    end
    lastMax, thr, gen, hend = inUse, now, gen + 1, now + HOLD_MAX
    -- The decrease: beta, or deeper when many of the sends since the
    -- last one were throttled, as DCTCP does: 1 - f/2 for a fraction f,
    -- at most halving (unless beta is lower).
    bt = math.min(beta, math.max(1 - dt / math.max(ds, 1) / 2, 0.5))
    if not closed then bt = math.min(bt, COLD_BETA) end
    ds, dt = 0, 0
    if not en then
      -- Start from an empty queue: the next slot is an interval away.
      en, tat, ptat = true, now, now
    end
  end
end

-- Write what changed: a reservation changes the measured rate and the
-- queue; a throttle, or the key's first call, everything.
pubSave(pub, ttl)
local w = {'m', f17(m), 'cnt', f17(cnt), 'bkt', f17(bkt), 'cl', closed and '1' or '0', 'ds', f17(ds),
  'tat', f17(tat), 'ptat', f17(ptat)}
if op == 'throttle' or not f[8] then
  local all = {'en', en and '1' or '0', 'gen', gen, 'max', f17(lastMax), 'thr', f17(thr),
    'org', f17(org), 'hend', f17(hend), 'bt', f17(bt), 'dt', f17(dt)}
  for _, x in ipairs(all) do w[#w + 1] = x end
end
redis.call('HSET', key, unpack(w))
redis.call('PEXPIRE', key, ttl)

local mm = measured()
local fill, burst = 0, 1
if en then
  local r = rate(mm)
  fill, burst = math.max(r, minFill), math.max(r * WINDOW, 1)
end
return {en and 1 or 0, gen, taken, string.format(fmt, slot),
  string.format(fmt, fill), string.format(fmt, mm), string.format(fmt, lastMax),
  string.format(fmt, thr), string.format(fmt, burst), string.format(fmt, tat),
  string.format(fmt, now), string.format(fmt, interval),
  pubPacing(pub, now) and 1 or 0, f17(pub.rem), f17(pub.rate), f17(pub.reset), waits}
