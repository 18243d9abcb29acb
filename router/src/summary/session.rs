//! What a statement does to session state ([`SessionEffect`]): SET and
//! RESET, DISCARD, PREPARE / EXECUTE / DEALLOCATE, and cursors (DECLARE,
//! FETCH / MOVE, CLOSE), with the text spans the proxy reads back.

use super::ValueSource;

/// What a statement does to the session's state on its server connection,
/// as a pooler must track it to move the session between connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEffect {
    /// `SET name = ...`, `SET name TO ...`, `SET name FROM CURRENT` (session
    /// scope). `name` lower-cased; the statement is replayed from its text,
    /// `start..start + len` in the parsed string (`len` 0: to its end), as
    /// the parser's `stmt_location` / `stmt_len` say.
    Set {
        name: String,
        start: usize,
        len: usize,
    },
    /// `RESET name`, `SET name TO DEFAULT`.
    Reset { name: String },
    /// `RESET ALL`.
    ResetAll,
    /// `SET LOCAL ...`, `SET TRANSACTION ...`, `SET CONSTRAINTS ...`: ends
    /// with the transaction. The statement's command tag.
    TransactionScoped(&'static str),
    /// A session change the pooler cannot replay (`SET SESSION
    /// CHARACTERISTICS AS TRANSACTION ...`).
    Untracked,
    /// `DEALLOCATE name`; `None` for `DEALLOCATE ALL`.
    Deallocate(Option<String>),
    /// `DISCARD ALL`.
    DiscardAll,
    /// `PREPARE name [(types)] AS statement`: a statement prepared under a
    /// name, which pgshard tracks itself (see [`crate::prepared`]). The
    /// summary's other facts are the prepared statement's (kind `Other`).
    /// `types`: the declared parameter types as a cast names them
    /// ([`Value::cast`]; `None` for a type without a plain name); the
    /// PREPARE's text is `start..start + len` in the parsed string (`len`
    /// 0: to its end), as the parser's `stmt_location` / `stmt_len` say.
    Prepare {
        name: String,
        types: Vec<Option<String>>,
        start: usize,
        len: usize,
    },
    /// `EXECUTE name [(arguments)]`, alone or wrapped by EXPLAIN or CREATE
    /// TABLE AS (the statement's kind says which): the name and its
    /// arguments; the statement's text is `start..start + len`, as for
    /// [`SessionEffect::Prepare`].
    Execute {
        name: String,
        args: Vec<Argument>,
        start: usize,
        len: usize,
    },
    /// A cursor statement: cursors are state of the server that declared
    /// them.
    Cursor(CursorEffect),
}

/// One argument of `EXECUTE name (arguments)`: what routing can read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Argument {
    /// A literal without a cast, as a key condition reads one
    /// ([`ValueSource::Integer`], [`ValueSource::Text`] for a string
    /// literal, [`ValueSource::Null`]), or a parameter (`$n`).
    Value(ValueSource),
    /// A numeric literal that is not an int4 (`10000000000`, `1.5`, `1e3`),
    /// as written: Postgres reads it as int8 or numeric.
    Number(String),
    /// Anything else: an expression, a cast literal, a boolean.
    Expression,
}

/// What a statement does with a cursor (a named portal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorEffect {
    /// `DECLARE name ... CURSOR ... FOR query` (the statement's tables and
    /// conditions are its query's).
    Declare {
        name: String,
        options: CursorOptions,
    },
    /// `FETCH` (`MOVE` when `moves`) as the parser reads it: `NEXT` is
    /// `Forward` 1, `PRIOR` `Backward` 1, `FIRST` `Absolute` 1, `LAST`
    /// `Absolute` -1, a bare count `Forward` (negative: backward), `ALL`
    /// the count [`FETCH_ALL`].
    Fetch {
        name: String,
        direction: FetchDirection,
        count: i64,
        moves: bool,
    },
    /// `CLOSE name`; `None` for `CLOSE ALL`.
    Close(Option<String>),
    /// `UPDATE` / `DELETE ... WHERE CURRENT OF name`.
    CurrentOf(String),
}

/// A FETCH count meaning `ALL` (Postgres's `FETCH_ALL`, `LONG_MAX`).
pub const FETCH_ALL: i64 = i64::MAX;

/// The options of `DECLARE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CursorOptions {
    /// `BINARY`: rows in binary.
    pub binary: bool,
    /// `SCROLL` (explicitly; `NO SCROLL` and no option are not).
    pub scroll: bool,
    /// `WITH HOLD`: the cursor outlives its transaction.
    pub hold: bool,
}

impl CursorOptions {
    /// From `DeclareCursorStmt.options` (Postgres's `CURSOR_OPT_*` bits).
    pub fn from_bits(bits: i32) -> CursorOptions {
        CursorOptions {
            binary: bits & 0x0001 != 0,
            scroll: bits & 0x0002 != 0,
            hold: bits & 0x0020 != 0,
        }
    }
}

/// A FETCH's direction, as the parser records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchDirection {
    Forward,
    Backward,
    Absolute,
    Relative,
}

impl SessionEffect {
    /// The text of a [`SessionEffect::Set`] in `sql`, the string it was
    /// parsed from, trimmed.
    pub fn set_text<'s>(&self, sql: &'s str) -> Option<&'s str> {
        match self {
            SessionEffect::Set { .. } => self.statement_text(sql),
            _ => None,
        }
    }

    /// The text of the statement a [`SessionEffect::Set`],
    /// [`SessionEffect::Prepare`] or [`SessionEffect::Execute`] belongs to,
    /// in `sql`, the string it was parsed from, trimmed.
    pub fn statement_text<'s>(&self, sql: &'s str) -> Option<&'s str> {
        let (SessionEffect::Set { start, len, .. }
        | SessionEffect::Prepare { start, len, .. }
        | SessionEffect::Execute { start, len, .. }) = self
        else {
            return None;
        };
        let text = match len {
            0 => sql.get(*start..)?,
            len => sql.get(*start..start.checked_add(*len)?)?,
        };
        Some(text.trim())
    }
}
