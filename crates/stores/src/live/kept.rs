//! A generation's kept rendering: one text, with the cost fields of a listing's table spliced
//! in once a listing (or the owner's timer) names one, made again when another is named.

use std::sync::Arc;

use super::{Held, ListingSpent, SpentTable, WeakTable};
use crate::held::HeldSessions;
use crate::render::RenderedAgent;

/// A generation's rendering and whose cost fields it carries.
#[derive(Debug)]
pub(super) struct KeptRendering {
    /// Shared with the listings being written from it: a listing keeps the text it was made of
    /// however the generation's is made again meanwhile.
    pub(super) text: Arc<RenderedAgent>,
    /// The table whose cost fields every element carries; `None` when the fields are missing or
    /// stale (a walk carried the text over). Held weakly: told apart by address (which a weak
    /// reference keeps from being reused), not kept alive once its owner lets it go.
    pub(super) costs: Option<WeakTable>,
}

impl KeptRendering {
    /// Whether it carries `table`'s cost fields.
    fn costed_by(&self, table: &SpentTable) -> bool {
        self.costs
            .as_ref()
            .is_some_and(|kept| std::sync::Weak::ptr_eq(kept, &Arc::downgrade(table)))
    }
}

impl Held {
    /// The rendering of its sessions for a listing, with `spent`'s cost fields when it has
    /// costs: the one kept (its fields spliced in now if another table made them), else made
    /// and kept now.
    pub(super) fn rendering(&self, spent: Option<&ListingSpent<'_>>) -> Arc<RenderedAgent> {
        let mut kept = self.rendered.lock();
        let kept = kept.get_or_insert_with(|| match spent {
            Some(spent) => KeptRendering {
                text: Arc::new(RenderedAgent::with_costs(&self.sessions, spent.of)),
                costs: Some(Arc::downgrade(spent.table)),
            },
            None => KeptRendering {
                text: Arc::new(RenderedAgent::new(&self.sessions)),
                costs: None,
            },
        });
        if let Some(spent) = spent {
            Held::recost_kept(kept, &self.sessions, spent);
        }
        Arc::clone(&kept.text)
    }

    /// Splices `spent`'s cost fields into the kept rendering, if one was made and does not
    /// carry them yet.
    pub(super) fn recost(&self, spent: &ListingSpent<'_>) {
        if let Some(kept) = self.rendered.lock().as_mut() {
            Held::recost_kept(kept, &self.sessions, spent);
        }
    }

    fn recost_kept(kept: &mut KeptRendering, sessions: &HeldSessions, spent: &ListingSpent<'_>) {
        if !kept.costed_by(spent.table) {
            RenderedAgent::recost(&mut kept.text, sessions, spent.of);
            kept.costs = Some(Arc::downgrade(spent.table));
        }
    }
}
