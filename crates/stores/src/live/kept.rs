//! A generation's kept rendering: one text, with the cost fields of a listing's table spliced
//! in once a listing (or the owner's timer) names one, made again when another is named. The
//! text is kept in an unnamed file of the state directory when the index has one
//! ([`TextDir`]): each text made is moved there, so the heap holds only its elements' places.

use std::sync::Arc;

use super::{Held, ListingSpent, SpentTable, WeakTable};
use crate::held::HeldSessions;
use crate::render::{RenderedAgent, TextDir};

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
    /// A new generation's rendering carried over from the one before (`kept`, of `before`),
    /// only the sessions that changed rendered again. The cost fields copied are stale (any may
    /// have moved, the new elements have none): spliced in again for the next table.
    pub(super) fn carried(
        before: &HeldSessions,
        kept: &RenderedAgent,
        sessions: &HeldSessions,
        dir: Option<&TextDir>,
    ) -> KeptRendering {
        let mut text = RenderedAgent::update(before, kept, sessions);
        if let Some(dir) = dir {
            text.keep_in(dir);
        }
        KeptRendering {
            text: Arc::new(text),
            costs: None,
        }
    }

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
    pub(super) fn rendering(
        &self,
        spent: Option<&ListingSpent<'_>>,
        dir: Option<&TextDir>,
    ) -> Arc<RenderedAgent> {
        let mut kept = self.rendered.lock();
        let kept = kept.get_or_insert_with(|| {
            let (mut text, costs) = match spent {
                Some(spent) => (
                    RenderedAgent::with_costs(&self.sessions, spent.of),
                    Some(Arc::downgrade(spent.table)),
                ),
                None => (RenderedAgent::new(&self.sessions), None),
            };
            if let Some(dir) = dir {
                text.keep_in(dir);
            }
            KeptRendering {
                text: Arc::new(text),
                costs,
            }
        });
        if let Some(spent) = spent {
            Held::recost_kept(kept, &self.sessions, spent, dir);
        }
        Arc::clone(&kept.text)
    }

    /// Splices `spent`'s cost fields into the kept rendering, if one was made and does not
    /// carry them yet.
    pub(super) fn recost(&self, spent: &ListingSpent<'_>, dir: Option<&TextDir>) {
        if let Some(kept) = self.rendered.lock().as_mut() {
            Held::recost_kept(kept, &self.sessions, spent, dir);
        }
    }

    /// A text made again by the recost is on the heap: moved to a file of `dir` (a new one;
    /// listings holding the old text keep theirs). One patched in place stays where it is. A
    /// text carrying the fields of the table before `spent`'s, none of whose sessions moved
    /// since ([`super::Unmoved`]), is only told it carries `spent`'s.
    fn recost_kept(
        kept: &mut KeptRendering,
        sessions: &HeldSessions,
        spent: &ListingSpent<'_>,
        dir: Option<&TextDir>,
    ) {
        if kept.costed_by(spent.table) {
            return;
        }
        let unmoved = spent.unmoved.is_some_and(|unmoved| {
            kept.costs
                .as_ref()
                .is_some_and(|costs| std::sync::Weak::ptr_eq(costs, unmoved.since))
                && !sessions.iter().any(|s| (unmoved.moved)(s.session_id()))
        });
        if !unmoved {
            RenderedAgent::recost(&mut kept.text, sessions, spent.of);
            if let Some(dir) = dir
                && let Some(text) = Arc::get_mut(&mut kept.text)
            {
                text.keep_in(dir);
            }
        }
        kept.costs = Some(Arc::downgrade(spent.table));
    }
}
