//! Every file's share of the calls ([`Share`]) in one table, by the ledger's slot number, in
//! blocks of [`BLOCK`] (issue 30). Each share boxed apart in an `Arc` was a block of its own a
//! file (a 72-byte share in the allocator's 96-byte class, with a pointer to it in the file's
//! slot and another in the accounting's list); here the shares sit in a few hundred blocks, and
//! an accounting holds the blocks, not each share: a new accounting after a file changed shares
//! every block but the one the file's share is in, which the ledger copies before changing
//! (`Arc::make_mut`: 256 shares, each a few counts bumped).
//!
//! A share's identity for [`crate::totals`] (which keeps each share's sum between accountings)
//! is its serial number ([`Share::serial`]), given when it is made: not an address, which a
//! share in a block does not keep.

use std::sync::Arc;

use crate::account::Share;

/// Shares a block holds.
const BLOCK: usize = 256;

/// Every file's share (see the module's header); [`Shares::iter`] gives them in slot order,
/// which means nothing to a report.
#[derive(Debug, Clone, Default)]
pub struct Shares {
    blocks: Vec<Arc<Vec<Option<Share>>>>,
    /// How many shares are kept.
    len: usize,
}

impl Shares {
    /// How many shares there are.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every share.
    pub fn iter(&self) -> impl Iterator<Item = &Share> {
        self.blocks.iter().flat_map(|block| block.iter().flatten())
    }

    /// The share at slot `at`, if any.
    pub(crate) fn get(&self, at: u32) -> Option<&Share> {
        let at = at as usize;
        self.blocks.get(at / BLOCK)?.get(at % BLOCK)?.as_ref()
    }

    /// Puts `share` at slot `at` in place of any there (`None`: none kept there).
    pub(crate) fn set(&mut self, at: u32, share: Option<Share>) {
        let at = at as usize;
        if share.is_none() && self.get(at as u32).is_none() {
            return;
        }
        while self.blocks.len() <= at / BLOCK {
            self.blocks.push(Arc::new(Vec::new()));
        }
        let block = Arc::make_mut(&mut self.blocks[at / BLOCK]);
        if block.len() <= at % BLOCK {
            // Made whole at once: a block grown one share at a time would hold up to twice.
            block.reserve_exact(BLOCK);
            block.resize_with(BLOCK, || None);
        }
        let old = std::mem::replace(&mut block[at % BLOCK], share);
        self.len = self.len + usize::from(block[at % BLOCK].is_some()) - usize::from(old.is_some());
    }

    /// Blocks past the last share given back (after files went).
    pub(crate) fn trim(&mut self) {
        while self
            .blocks
            .last()
            .is_some_and(|block| block.iter().all(Option::is_none))
        {
            self.blocks.pop();
        }
        crate::states::trim(&mut self.blocks);
    }

    /// The heap bytes of the blocks, with each share's own beyond its names (counted with the
    /// parses) and calls.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Arc<Vec<Option<Share>>>>()
            + self
                .blocks
                .iter()
                .map(|block| {
                    16 + std::mem::size_of::<Vec<Option<Share>>>()
                        + block.capacity() * std::mem::size_of::<Option<Share>>()
                })
                .sum::<usize>()
            + self.iter().map(Share::heap_bytes).sum::<usize>()
    }
}

impl FromIterator<Share> for Shares {
    fn from_iter<I: IntoIterator<Item = Share>>(shares: I) -> Shares {
        let mut out = Shares::default();
        let mut block: Vec<Option<Share>> = Vec::new();
        for share in shares {
            if block.len() == BLOCK {
                out.blocks.push(Arc::new(std::mem::take(&mut block)));
            }
            block.push(Some(share));
            out.len += 1;
        }
        if !block.is_empty() {
            block.shrink_to_fit();
            out.blocks.push(Arc::new(block));
        }
        out
    }
}

/// The same shares in the same order.
impl PartialEq for Shares {
    fn eq(&self, other: &Shares) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::ShareNames;
    use crate::calls::{Call, Calls};
    use crate::keys::CallKey;
    use crate::tokens::Tokens;
    use cross_agent_protocol::Agent;

    fn share(session: &str) -> Share {
        let calls: Calls = Arc::new(
            [Call {
                key: CallKey::default(),
                timestamp: None,
                model: None,
                tokens: Tokens::default(),
            }]
            .into_iter()
            .collect(),
        );
        let names = ShareNames {
            agent: Agent::Claude,
            session_id: session.into(),
            subagent: None,
            cwd: None,
        };
        Share::new(names, calls, |_| true, Vec::new()).unwrap()
    }

    /// Shares set, replaced and taken out by slot are found there and counted; a copy of the
    /// table (an accounting's) keeps what it held when the table changes after; trimming
    /// drops only blocks with no share.
    #[test]
    fn shares_are_kept_by_slot_and_a_copy_keeps_its_own() {
        let mut shares = Shares::default();
        shares.set(3, Some(share("a")));
        shares.set(700, Some(share("b")));
        shares.set(3, Some(share("c")));
        assert_eq!(shares.len(), 2);
        assert_eq!(shares.get(3).map(|s| &*s.session_id), Some("c"));
        assert_eq!(shares.get(4), None);
        let kept = shares.clone();
        shares.set(700, None);
        shares.set(701, None);
        assert_eq!(shares.len(), 1);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept.get(700).map(|s| &*s.session_id), Some("b"));
        let names: Vec<&str> = kept.iter().map(|s| &*s.session_id).collect();
        assert_eq!(names, ["c", "b"]);
        assert!(Arc::ptr_eq(&kept.blocks[0], &shares.blocks[0]), "shared");
        shares.trim();
        assert_eq!(shares.blocks.len(), 1);
        let listed: Shares = [share("c")].into_iter().collect();
        assert_eq!(listed, shares);
        assert_ne!(listed, kept);
    }
}
