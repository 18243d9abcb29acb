// Shared helper for the Node.js driver checks (node-postgres.mjs, postgresjs.mjs):
// reads the target from the PGSHARD_* environment, runs registered checks one
// after another, each under its own timeout, prints `ok <name>` or
// `FAIL <name>: <reason>` per check and a final `<driver> <mode>: N passed, M failed`,
// and exits 0 iff nothing failed. A check gets a context `t` on which it
// registers what must be undone (t.defer: cleanup SQL, best effort) and closed
// (t.onClose: connections), which runs even after a failure or a timeout.
// For work by hand: PGSHARD_CHECKS=name,name runs only those checks, and
// PGSHARD_VERBOSE=1 prints each check's time on stderr.

export const env = readEnv()

function readEnv() {
  const e = process.env
  const need = (name) => {
    const v = e[name]
    if (v === undefined || v === '') {
      console.error(`missing environment variable ${name}`)
      process.exit(2)
    }
    return v
  }
  const mode = need('PGSHARD_MODE')
  if (!['transaction', 'session', 'sharded', 'columns'].includes(mode)) {
    console.error(`PGSHARD_MODE must be transaction, session, sharded or columns, not ${mode}`)
    process.exit(2)
  }
  return {
    host: need('PGSHARD_HOST'),
    port: Number(need('PGSHARD_PORT')),
    user: need('PGSHARD_USER'),
    password: e.PGSHARD_PASSWORD ?? '',
    database: need('PGSHARD_DATABASE'),
    // The admin console is pgshard's: checks on it run only when it is named.
    adminUser: e.PGSHARD_ADMIN_USER || null,
    adminPassword: e.PGSHARD_ADMIN_PASSWORD ?? '',
    mode,
    sharded: mode === 'sharded',
    // Two shards, no drv_items: tables are sharded by an `id` column.
    columns: mode === 'columns',
    poolSize: Number(e.PGSHARD_POOL_SIZE || 4),
    shards: Number(e.PGSHARD_SHARDS || 1),
    shardPorts: (e.PGSHARD_SHARD_PORTS || '').split(',').filter(Boolean).map(Number),
  }
}

/** Thrown by the assertion helpers; its message is the FAIL reason. */
export class CheckError extends Error {}

export function assert(cond, msg) {
  if (!cond) throw new CheckError(msg)
}

export function eq(actual, expected, what) {
  const a = JSON.stringify(actual)
  const b = JSON.stringify(expected)
  if (a !== b) throw new CheckError(`${what}: got ${clip(a)}, want ${clip(b)}`)
}

/** Awaits `promise` and requires it to fail with SQLSTATE `code`; returns the error. */
export async function expectCode(promise, code, what) {
  let res
  try {
    res = await promise
  } catch (e) {
    if (e && e.code === code) return e
    throw new CheckError(`${what}: want SQLSTATE ${code}, got error ${describe(e)}`)
  }
  throw new CheckError(`${what}: want SQLSTATE ${code}, got success ${clip(JSON.stringify(summarize(res)))}`)
}

/**
 * What pgshard deliberately does not support yet: `promise` must fail with
 * SQLSTATE 0A000 within `ms` (a clean refusal, not a hang); returns the error.
 */
export async function expectRefused(promise, what, ms = 3000) {
  return withTimeout(expectCode(promise, '0A000', what), ms, `${what}: want refusal with SQLSTATE 0A000`)
}

/** Awaits `promise`, turning a failure into a CheckError that says what was run. */
export async function must(promise, what) {
  try {
    return await promise
  } catch (e) {
    if (e instanceof CheckError) throw e
    throw new CheckError(`${what}: ${describe(e)}`)
  }
}

export function withTimeout(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckError(`${what}: no answer within ${ms / 1000} s`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** `code message` of a server error, or the message of any other error. */
export function describe(e) {
  if (e == null) return String(e)
  if (e instanceof CheckError) return e.message
  const code = e.code && /^[0-9A-Z]{5}$/.test(e.code) ? `${e.code} ` : e.code ? `[${e.code}] ` : ''
  return clip(`${code}${e.message ?? String(e)}`.replace(/\s+/g, ' '))
}

function summarize(res) {
  if (res && Array.isArray(res.rows)) return res.rows.slice(0, 3) // node-postgres
  if (Array.isArray(res)) return [...res].slice(0, 3) // postgres.js
  return res
}

function clip(s, n = 300) {
  s = String(s)
  return s.length > n ? s.slice(0, n) + '...' : s
}

class Context {
  constructor(name) {
    this.name = name
    this.cleanups = [] // async () => ..., run first, newest first
    this.closers = [] // { close: async () => ..., destroy: () => ... }
  }

  /** Best-effort cleanup (DROP TABLE, DELETE) run after the check, before closing. */
  defer(fn) {
    this.cleanups.push(fn)
  }

  /** A connection to close after the check: `close` gracefully, `destroy` if that hangs. */
  onClose(close, destroy = () => {}) {
    this.closers.push({ close, destroy })
  }

  async finish() {
    for (const fn of this.cleanups.reverse()) {
      try {
        await withTimeout(Promise.resolve().then(fn), 3000, 'cleanup')
      } catch (e) {
        console.error(`# ${this.name}: cleanup failed: ${describe(e)}`)
      }
    }
    await Promise.all(
      this.closers.reverse().map(async ({ close, destroy }) => {
        try {
          await withTimeout(Promise.resolve().then(close), 2500, 'close')
        } catch (e) {
          try {
            destroy()
          } catch {
            // already gone
          }
        }
      }),
    )
  }
}

const checks = []

/**
 * Registers a check. `opts.modes` limits it to some modes (by default every
 * mode but `columns`, whose checks create their own tables); `opts.timeout`
 * (ms) overrides the default 15 s.
 */
export function check(name, fn, opts = {}) {
  const modes = opts.modes ?? ['transaction', 'session', 'sharded']
  if (!modes.includes(env.mode)) return
  checks.push({ name, fn, timeout: opts.timeout ?? 15000 })
}

/** Runs every registered check in order, prints the summary line and exits. */
export async function run(driver) {
  // A check that timed out may go on failing in the background: keep those
  // late errors from killing the run (they were already reported as FAIL).
  process.on('unhandledRejection', (e) => console.error(`# late rejection: ${describe(e)}`))
  process.on('uncaughtException', (e) => console.error(`# late exception: ${describe(e)}`))

  const only = process.env.PGSHARD_CHECKS ? new Set(process.env.PGSHARD_CHECKS.split(',')) : null
  let passed = 0
  let failed = 0
  for (const c of checks) {
    if (only && !only.has(c.name)) continue
    const t = new Context(c.name)
    const started = Date.now()
    let error = null
    try {
      await withTimeout(Promise.resolve().then(() => c.fn(t)), c.timeout, 'check timed out')
    } catch (e) {
      error = e
    }
    await t.finish()
    const secs = ((Date.now() - started) / 1000).toFixed(1)
    if (error) {
      failed++
      console.log(`FAIL ${c.name}: ${describe(error)}`)
    } else {
      passed++
      console.log(`ok ${c.name}`)
    }
    if (process.env.PGSHARD_VERBOSE) console.error(`#   ${c.name}: ${secs} s`)
  }
  console.log(`${driver} ${env.mode}: ${passed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
}

/** A range of drv_items ids a check may use without meeting another check or driver. */
export function ids(base, n) {
  return Array.from({ length: n }, (_, i) => base + i)
}

// Mode `columns`: where the rows of the checks' own tables landed, read from
// each shard directly (`perShard`: each shard's rows, arrays of values).

/** The shards' ports and databases, for direct connections. */
export function shards() {
  return env.shardPorts.map((port, i) => ({ port, database: `shard_${i}` }))
}

const text = (row) => row.map((v) => (v === null || v === undefined ? null : String(v)))
const sorted = (rows) => rows.map(text).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1))

/**
 * `want` (rows whose first value is `id`) is `table` sharded by id: each row
 * on exactly one shard, every shard holding some, and `byKey(id)` (pgshard
 * reading the row by its key) finding each where it is.
 */
export async function expectSharded(table, perShard, want, byKey) {
  eq(sorted(perShard.flat()), sorted(want), `${table}: the shards' rows together`)
  const counts = perShard.map((rows) => rows.length)
  assert(counts.every((n) => n > 0), `${table}: a shard holds none of the ${want.length} rows: ${counts}`)
  for (const row of want) eq(sorted(await byKey(row[0])), sorted([row]), `${table}: id ${row[0]} read by key through pgshard`)
}

/** Every shard holds all the rows `want` of `table` (omnisharded). */
export function expectCopies(table, perShard, want) {
  perShard.forEach((rows, i) => eq(sorted(rows), sorted(want), `${table}: rows on shard ${i}`))
}
