//! How a statement sent to the coordinator path came (a simple query, a
//! carried subquery, a Bind, an SQL EXECUTE, an INSERT's SELECT), and so
//! how its finish runs on the coordinator and its reply goes to the client.

use crate::protocol::frontend::Bind;

/// How the statement came, and so how its finish runs on the coordinator
/// and its reply goes to the client.
#[derive(Debug)]
pub(in crate::session) enum Finish {
    /// A simple query: the finish is one too.
    Simple,
    /// A query pgshard runs for itself (a subquery carried into a write,
    /// `carry.rs`): its reply stays in the client's buffer, never flushed,
    /// for pgshard to read and take out. A simple query; or, for a bound
    /// write (`Some`), parsed with the write's parameter types and bound
    /// with its Bind's values (text results, the unnamed portal, described
    /// so that its RowDescription names the columns).
    Carried(Option<Box<(Bind, Vec<u32>)>>),
    /// A subquery carried into an SQL EXECUTE's write (`carry/execute.rs`):
    /// as [`Finish::Carried`], prepared with the client's type list and
    /// executed with the EXECUTE's arguments as [`Finish::Sql`] is.
    CarriedSql { types: String, args: String },
    /// A Bind of a prepared statement (its parameter types), then its
    /// Execute (`max_rows`: its row limit, 0 for none): the finish is
    /// parsed with those types, bound with the client's values and result
    /// formats to the client's portal name, and executed so.
    Extended {
        bind: Bind,
        param_types: Vec<u32>,
        max_rows: i32,
    },
    /// `EXECUTE name (arguments)` of a statement prepared with SQL
    /// PREPARE: the finish is prepared on the coordinator with the client's
    /// type list (`types`), executed with the client's arguments as written
    /// (`args`, the EXECUTE's text after the name) and deallocated; sent
    /// through the extended protocol (`extended`), its RowDescription is the
    /// portal's Describe's and is not relayed again.
    Sql {
        types: String,
        args: String,
        extended: bool,
    },
    /// The SELECT of an INSERT whose rows go to their shards
    /// (`insert_select.rs`): its rows fill a stage, copied to the shards.
    /// Bound in the extended protocol (`Some`): the client's Bind (its
    /// values for the SELECT, its result formats for RETURNING) and the
    /// statement's parameter types.
    Insert(
        Box<router::insert_select::InsertSelect>,
        Option<Box<(Bind, Vec<u32>)>>,
    ),
}

impl Finish {
    /// Its reply goes to the client in the simple protocol.
    pub(super) fn simple(&self) -> bool {
        matches!(
            self,
            Finish::Simple
                | Finish::Carried(None)
                | Finish::CarriedSql { .. }
                | Finish::Insert(_, None)
                | Finish::Sql {
                    extended: false,
                    ..
                }
        )
    }
}
