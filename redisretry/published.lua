-- One scope's shared pacing by the quota its server publishes (see
-- published.go and docs/published-quotas.md): the fleet's sends take
-- places in one queue, credited at
--
--   rate = (remaining - PUB_MARGIN) / (seconds to the reset)
--
-- places per second, from the freshest quota any replica has reported, as
-- package ratelimit's published type paces one client. Since every
-- replica takes its places from this one queue, the rate is the fleet's:
-- there is no share of it to estimate. adaptive_script.go puts this file
-- before adaptive.lua, whose script calls these functions. Times are
-- microseconds of the script's clock.
--
-- The hash (KEYS[2]) holds on ("1" once a quota was published: it paces
-- until reset), rem (the remaining count last published), reset, rate
-- (places per second), cap (the most places credited beyond the latest
-- taken), due (the credit: the places up to due may go), ref (the instant
-- due was computed for) and last (the latest place taken). No key: nothing
-- is paced.

local PUB_RESOLUTION = 1000000 -- resets this close may be one instant, rounded differently
local PUB_MARGIN = 1           -- requests of the window left unspent at the reset
local PUB_WINDOW = 0.1         -- seconds of the rate credited ahead at most
local PUB_MAX_WAIT = 20000000  -- a longer wait is not imposed (policy.Policy's MaxDelay)
local PUB_SLACK = 1e-9         -- places a place may still be owed and be due (rounding)

local PUB_FIELDS = {'on', 'rem', 'reset', 'rate', 'cap', 'due', 'ref', 'last'}

-- pubLoad reads the hash at key, keeping the fields as read (stored), for
-- pubSave to write only those that change.
local function pubLoad(key)
  local f = redis.call('HMGET', key, unpack(PUB_FIELDS))
  local function n(i) return tonumber(f[i]) or 0 end
  return {key = key, on = f[1] == '1', rem = n(2), reset = n(3), rate = n(4), cap = n(5),
    due = n(6), ref = n(7), last = n(8), dirty = false, stored = f}
end

-- pubPacing reports whether q paces sends at now: a quota was published
-- and its window has not reset. From the reset until a replica reports
-- the next window's quota, nothing is paced.
local function pubPacing(q, now) return q.on and now < q.reset end

-- pubRefill credits the places of the rate from ref to now, up to cap
-- beyond the latest place taken.
local function pubRefill(q, now)
  if now > q.ref then
    q.due = math.min(q.due + (now - q.ref) / 1000000 * q.rate, q.last + q.cap)
    q.ref, q.dirty = now, true
  end
end

-- pubUpdate records at now a published quota: remaining left, resetting d
-- µs later, with the rules of ratelimit's published.update. A reset that
-- has come (d <= 0) is ignored, and so is one more than PUB_RESOLUTION
-- before the one known while that one is ahead: the answer to a request of
-- the window that has ended, recorded after the new window's first. Within
-- PUB_RESOLUTION, with no more remaining than before, it is the same window
-- and the earlier reset, nearest the truth when servers round up to whole
-- seconds, is kept. The remaining count replaces the one known.
local function pubUpdate(q, now, remaining, d)
  if not (d > 0) then return end
  local reset = now + d
  local fresh = not pubPacing(q, now)
  if not fresh then
    if reset < q.reset - PUB_RESOLUTION then return end
    if reset <= q.reset + PUB_RESOLUTION and remaining <= q.rem then
      reset = math.min(reset, q.reset)
    end
    pubRefill(q, now)
  end
  q.on, q.rem, q.reset, q.dirty = true, remaining, reset, true
  local left = math.max(remaining - PUB_MARGIN, 0)
  q.rate = left / ((reset - now) / 1000000)
  q.cap = math.min(math.max(q.rate * PUB_WINDOW, 1), left)
  if fresh then
    -- A first quota, or the first of a new window: a full allowance to
    -- start with.
    q.due, q.ref = q.last + q.cap, now
  end
  q.due = math.min(q.due, q.last + q.cap)
end

-- pubWait returns how long, in µs from now, the next place would wait:
-- until the credit reaches it, never past the reset, and not at all if
-- that would be longer than PUB_MAX_WAIT.
local function pubWait(q, now)
  if not pubPacing(q, now) then return 0 end
  pubRefill(q, now)
  local owed = q.last + 1 - q.due
  if owed <= PUB_SLACK then return 0 end
  local w = q.reset - now
  if q.rate > 0 then w = math.min(owed / q.rate * 1000000, w) end
  if w > PUB_MAX_WAIT or w ~= w then return 0 end
  return w
end

-- pubTake takes the next place, while q paces: outside a window the
-- places do not matter, since the next window's first quota credits from
-- the latest one.
local function pubTake(q, now)
  if pubPacing(q, now) then q.last, q.dirty = q.last + 1, true end
end

-- pubGiveBack credits one place back, while q paces, for a reservation
-- whose send was abandoned: the places behind it move up one. A cancel
-- calls it whether or not the reservation took a place, as package
-- ratelimit's published queue gives one back, so that a replica need not
-- remember which did: one that took none, since q did not pace then,
-- gives one back only if a window began since, within the window's
-- allowance (cap).
local function pubGiveBack(q, now)
  if pubPacing(q, now) then
    pubRefill(q, now)
    q.due, q.dirty = math.min(q.due + 1, q.last + q.cap), true
  end
end

-- pubSave writes q, if it changed, with the key's TTL of ttl ms: only the
-- fields whose stored text changes, so that a paced reservation writes the
-- credit and the latest place (due, ref, last), not the window's quota.
local function pubSave(q, ttl)
  if not q.dirty then return end
  local function s(x) return string.format('%.17g', x) end
  local v = {q.on and '1' or '0', s(q.rem), s(q.reset), s(q.rate), s(q.cap), s(q.due), s(q.ref), s(q.last)}
  local w = {}
  for i, name in ipairs(PUB_FIELDS) do
    if v[i] ~= q.stored[i] then
      w[#w + 1] = name
      w[#w + 1] = v[i]
    end
  end
  if #w > 0 then redis.call('HSET', q.key, unpack(w)) end
  redis.call('PEXPIRE', q.key, ttl)
end
