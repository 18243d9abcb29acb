//! What a lookup gives: the entry, this text's values of the literals it
//! reads and the overrides of its comments ([`Lookup`]), the parameters to
//! route with, and why a text could not be looked up ([`LookupError`]).

use std::sync::Arc;

use super::entry::Entry;
use super::literals::Literals;
use super::templated::values_of;
use crate::route::{Overrides, ParamValue, ParamValues, Params};
use crate::template::Template;

/// The outcome of [`AstCache::lookup`].
#[derive(Debug, Clone)]
pub struct Lookup {
    pub entry: Arc<Entry>,
    /// For a templated entry, the values of this text's literals that the
    /// summary reads as parameters `literal_base + 1 ..` (see
    /// [`Lookup::params`]); empty otherwise.
    pub literals: Literals,
    /// From the edge comments of this text, then from comments inside it
    /// (each setting from the first place that names it).
    pub overrides: Overrides,
    /// Served from the cache, without parsing.
    pub hit: bool,
}

impl Lookup {
    /// A hit on `entry` by its own text, with `edge` the overrides of the
    /// text's edge comments.
    pub(super) fn exact(entry: Arc<Entry>, edge: Overrides) -> Lookup {
        Lookup {
            literals: entry.text_literals.clone(),
            overrides: merge(edge, &entry.overrides),
            entry,
            hit: true,
        }
    }

    /// The parameters to route with: the first `literal_base` bind
    /// parameters (padded with `Null` if fewer arrived), then the literals
    /// as text. Without literals, `bind` itself.
    pub fn params<'a>(&'a self, bind: &'a [ParamValue<'a>]) -> Params<'a> {
        if self.literals.is_empty() {
            return Params::Borrowed(bind);
        }
        let mut params = ParamValues::new();
        for i in 0..usize::from(self.entry.literal_base) {
            params.push(bind.get(i).copied().unwrap_or(ParamValue::Null));
        }
        for literal in self.literals.iter() {
            params.push(ParamValue::Text(literal));
        }
        Params::Owned(params)
    }
}

/// Edge overrides first, then the entry's.
pub(super) fn merge(edge: Overrides, inner: &Overrides) -> Overrides {
    Overrides {
        shard: edge.shard.or(inner.shard),
        sharding_key: edge.sharding_key.or_else(|| inner.sharding_key.clone()),
    }
}

/// This text's values of the literals `entry` reads; `None` if the text does
/// not fit the entry (cannot happen for texts of the same key).
pub(super) fn literal_values(
    entry: &Entry,
    core: &str,
    template: Option<&Template>,
) -> Option<Literals> {
    if !entry.templated {
        return Some(Literals::default());
    }
    values_of(&entry.uses, core, &template?.literals)
}
