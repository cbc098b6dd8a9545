-- Recurring messages (V21): the schedulers' statements and the administration of schedules.
-- Next fire times are computed by the JVM from the cron expression and bound as :next_fire_at;
-- "now" is always the database's, so that the clocks of the application's hosts do not matter.

-- name: database_now
-- The instant a new or changed schedule's first tick is computed after.
SELECT clock_timestamp() AS now;

-- name: due_schedules
-- The scheduler's one read per wake-up: the active schedules whose next tick is due within
-- :horizon_ms, earliest first, with the database's now to compare them with (and to compute missed
-- ticks from). Walks the partial index schedule_due.
SELECT name, cron, zone, missed, next_fire_at, clock_timestamp() AS now
  FROM pgqueue.schedule
 WHERE NOT paused
   AND next_fire_at <= clock_timestamp() + :horizon_ms * interval '1 millisecond'
 ORDER BY next_fire_at
 LIMIT :limit;

-- name: fire_schedule
-- Moves a schedule from its tick :due to :next_fire_at, and returns what to send if :send. The
-- compare-and-set that makes a tick go out once: it updates the row only if next_fire_at is still
-- :due on the newest committed version, under the row lock, and the caller sends the message in
-- the same transaction. A JVM that races for the tick finds the row locked (SKIP LOCKED: it does
-- not wait for a peer that may hang) or, once the winner committed, next_fire_at moved: no row,
-- nothing sent. If the winner rolls back (its send failed), the tick is still due for the others.
-- The cron, zone and missed policy the JVM computed :next_fire_at with must still be the row's.
UPDATE pgqueue.schedule s
   SET next_fire_at = :next_fire_at,
       last_fired_at = CASE WHEN :send THEN :tick ELSE s.last_fired_at END,
       last_sent_at = CASE WHEN :send THEN clock_timestamp() ELSE s.last_sent_at END,
       fired = s.fired + CASE WHEN :send THEN 1 ELSE 0 END
 WHERE s.name = (SELECT l.name FROM pgqueue.schedule l WHERE l.name = :name FOR UPDATE SKIP LOCKED)
   AND s.next_fire_at = :due
   AND NOT s.paused
   AND s.cron = :cron AND s.zone = :zone AND s.missed = :missed
RETURNING s.queue, s.exchange, s.routing_key, s.payload::text AS payload, s.headers::text AS headers;

-- name: create_schedule
-- Inserts a schedule unless one of its name exists: no row is changed then.
INSERT INTO pgqueue.schedule (name, cron, zone, queue, exchange, routing_key, payload, headers, missed, next_fire_at)
VALUES (:name, :cron, :zone, :queue, :exchange, :routing_key, :payload::jsonb, :headers::jsonb, :missed, :next_fire_at)
ON CONFLICT (name) DO NOTHING;

-- name: alter_schedule
-- Changes an existing schedule's definition. Its next tick is the one computed for the new
-- definition only if the cron expression or the zone changed: a change of target, payload or
-- policy keeps the tick that is due, and a tick is neither repeated nor lost by a restart that
-- declares the same schedule again. A paused schedule stays paused.
UPDATE pgqueue.schedule
   SET cron = :cron, zone = :zone, queue = :queue, exchange = :exchange, routing_key = :routing_key,
       payload = :payload::jsonb, headers = :headers::jsonb, missed = :missed,
       next_fire_at = CASE WHEN cron <> :cron OR zone <> :zone THEN :next_fire_at ELSE next_fire_at END,
       updated_at = now()
 WHERE name = :name;

-- name: pause_schedule
UPDATE pgqueue.schedule SET paused = true, updated_at = now() WHERE name = :name;

-- name: resume_schedule
-- Resumes a paused schedule from its first tick after now (:next_fire_at, computed with :cron and
-- :zone, which must still be the schedule's): ticks of the pause are not sent. A schedule that
-- is not paused is left as it is, its tick too, but still counts as found.
UPDATE pgqueue.schedule
   SET next_fire_at = CASE WHEN paused THEN :next_fire_at ELSE next_fire_at END,
       paused = false, updated_at = now()
 WHERE name = :name AND cron = :cron AND zone = :zone;

-- name: remove_schedule
DELETE FROM pgqueue.schedule WHERE name = :name;

-- name: schedules
-- Every schedule by name, or the one named :name.
SELECT name, cron, zone, queue, exchange, routing_key, payload::text AS payload, headers::text AS headers, missed,
       paused, next_fire_at, last_fired_at, last_sent_at, fired
  FROM pgqueue.schedule
 WHERE :name::text IS NULL OR name = :name
 ORDER BY name;

-- name: target_declared
-- Whether a schedule's target exists: the queue :queue is declared, or the exchange :exchange.
SELECT EXISTS (SELECT 1 FROM pgqueue.queue WHERE name = :queue)
    OR EXISTS (SELECT 1 FROM pgqueue.exchange WHERE name = :exchange) AS declared;
