//! A shape's last parse made over for the next text in place: its constants where the shape
//! has `$k` take the new text's literals. Copying the shape's statements and dropping the last
//! parse on every hit was a third of the hit's cost (perf at 6,000 pgbench transactions/s).
//! The parse and the shape have the same tree but for those leaves (`$k` in one, a constant
//! in the other), so a walk visits their expressions in the same order: the shape's walk
//! gives each `$k` its place in that order once, and the refill walks the parse to those
//! places. Debug builds compare each refilled parse with a real parse (`ShapeCache::checked`).
use super::{Literal, Shape};
use crate::router::cache::Parsed;
use pg_query_raw::router::{Expr, Statement, VisitMut};

/// A `$k` of the shape: the index of its expression in a walk of the statements, and `k - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    at: usize,
    literal: usize,
}

/// The slots of the shape's `statements`, in walk order, and the number of expressions walked.
pub(super) fn slots(statements: &mut [Statement]) -> (Vec<Slot>, usize) {
    struct Find(usize, Vec<Slot>);
    impl VisitMut for Find {
        fn expr(&mut self, e: &mut Expr) {
            if let Expr::Param(k) = e {
                if let Some(literal) = (*k as usize).checked_sub(1) {
                    self.1.push(Slot {
                        at: self.0,
                        literal,
                    });
                }
            }
            self.0 += 1;
        }
    }
    let mut find = Find(0, Vec::new());
    statements.iter_mut().for_each(|st| st.walk_mut(&mut find));
    (find.1, find.0)
}

/// Puts `lits` (the literals of `sql`, a text of `shape`) in `parsed`, the parse of another
/// text of that shape, and moves its offsets to `sql`'s; its merge plans are dropped and its
/// comments read again. `None` when it does not fit: `parsed` is then half made and must be
/// dropped.
pub(super) fn refill(
    shape: &Shape,
    parsed: &mut Parsed,
    sql: &str,
    lits: &[Literal],
) -> Option<()> {
    if lits.len() != shape.placeholders.len() || parsed.statements.len() != shape.statements.len() {
        return None;
    }
    let mut put = Put {
        slots: &shape.slots,
        lits,
        seen: 0,
        next: 0,
        ok: true,
    };
    parsed
        .statements
        .iter_mut()
        .for_each(|st| st.walk_mut(&mut put));
    // Every slot filled, and a tree of the shape's size.
    if !put.ok || put.next != shape.slots.len() || put.seen != shape.exprs {
        return None;
    }
    shape.locate(&mut parsed.statements, sql, lits)?;
    parsed.renew(sql);
    Some(())
}

struct Put<'a> {
    slots: &'a [Slot],
    lits: &'a [Literal],
    /// Expressions walked so far.
    seen: usize,
    /// The next slot.
    next: usize,
    ok: bool,
}

impl VisitMut for Put<'_> {
    fn expr(&mut self, e: &mut Expr) {
        if let Some(slot) = self.slots.get(self.next).filter(|s| s.at == self.seen) {
            self.next += 1;
            match (e, self.lits.get(slot.literal)) {
                (Expr::Const(c), Some(l)) => c.clone_from(&l.value),
                _ => self.ok = false,
            }
        }
        self.seen += 1;
    }
}
