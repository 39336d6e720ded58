//! Simple-protocol statements parsed once per shape. Apps that send their values as literals
//! make every text different, so the text-keyed [`QueryCache`] misses every time; this cache
//! keys a statement by its text with the literals taken out, found by Postgres' own scanner
//! (`pg_query_raw::tokens`, a fraction of a parse).
//!
//! On a miss the text is parsed as before; its shape (each literal replaced by `$n`) is parsed
//! too, the literals put back in place of the parameters, and the result compared with the real
//! parse. Only when the two are equal is the shape kept. A later text of that shape gets the
//! shape's statements with its own literals put in: the very tree parsing it would give,
//! because the grammar's derivation depends on token kinds only and the shape fixes them. When
//! the first text repeats a value, a second text with distinct values is checked too, so a
//! literal can never stand in another's place. A literal whose value changes the tree (`-5`
//! folded into one constant, `float(3)`, `varchar(10)`, `SET x = 'v'`, any position where the
//! grammar wants a literal and refuses `$n`) makes the comparison fail or the shape not parse:
//! that shape is marked not cacheable and its texts are parsed every time. (Typed literals such
//! as `int '5'` or `interval '1' day` take `$n` with the same tree: they are served.) Only the
//! plain literal forms are taken out (digits, decimal numbers, `'...'` strings without
//! backslashes); a text with any other literal (E'', U&'', $$...$$, bit strings, hex or
//! underscored numbers) or a `$n` goes to the text cache as before.
//!
//! Everything the session reads from the text itself (what it sends, comments such as
//! `pgdog_shard`, merge plans, rewrites) still comes from the real text: a hit only replaces
//! the parse. The last text of each shape keeps its parse (and the merge plans made for it), so
//! a text repeated as it is reuses them; when no session holds it any more, the next text of
//! the shape is filled into it in place (`refill`). Literals are found in one pass over the
//! text when it has only plain forms (`quick`), else by the scanner. Debug builds (the test
//! suites) check every hit against a real parse and every quick scan against the scanner.
//! Bounded by `query_shape_cache_limit` (0: off, every text goes to the text cache).
//!
//! A sharded session asks with its router (`serve`): a shape that router routes by one literal
//! (`super::point`, decided once per shape and router) comes back as that literal and plan, with
//! no parse made for the text at all.
use super::cache::{calls_in, parse_off_the_workers, Calls, Parsed, QueryCache};
use super::point::Point;
use super::route::{Overrides, Route};
use super::{Router, RouterError};
use lru::LruCache;
use parking_lot::Mutex;
use pg_query_raw::router::{Const, Expr, Statement, VisitMut};
use pg_query_raw::token;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

mod quick;
mod refill;

/// A literal of the text: its byte range and the constant the parser makes of it.
#[derive(Debug, Clone, PartialEq)]
struct Literal {
    start: usize,
    end: usize,
    value: Const,
}

/// The literals of `sql`, in order; `None` when a token cannot be taken out exactly (another
/// literal form, a `$n`) or the text does not scan (the parse reports the error). Read by
/// [`quick`] when it can, else by Postgres' scanner; debug builds check the first against the
/// second.
fn literals(sql: &str) -> Option<Vec<Literal>> {
    let Some(lits) = quick::literals(sql) else {
        return scanned(sql);
    };
    if cfg!(debug_assertions) {
        let real = scanned(sql);
        if real.as_ref() != Some(&lits) {
            ShapeCache::global().mismatches.fetch_add(1, Relaxed);
            tracing::error!("shape cache: the quick scan of {sql:?} differs from the scanner's");
            return real;
        }
    }
    Some(lits)
}

/// The literals of `sql` by Postgres' own scanner.
fn scanned(sql: &str) -> Option<Vec<Literal>> {
    let tokens = pg_query_raw::tokens(sql, token::is_literal_or_param).ok()?;
    let mut after = 0;
    tokens
        .iter()
        .map(|t| {
            // In order, apart: the key and the shape are cut at these ranges.
            if t.start < after {
                return None;
            }
            after = t.end;
            let raw = sql.get(t.start..t.end)?;
            let value = match t.token {
                token::ICONST => integer(raw)?,
                token::FCONST => numeric(raw)?,
                token::SCONST => Const::String(string(raw)?),
                _ => return None,
            };
            Some(Literal {
                start: t.start,
                end: t.end,
                value,
            })
        })
        .collect()
}

/// A decimal integer the scanner made an ICONST (it fits in 32 bits).
fn integer(raw: &str) -> Option<Const> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok().map(Const::Integer)
}

/// A decimal number (`1.5`, `.5`, `1e10`, an integer too large for 32 bits): the parser keeps
/// its text as written.
fn numeric(raw: &str) -> Option<Const> {
    let plain = raw
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    (plain
        && raw
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.'))
    .then(|| Const::Numeric(raw.to_string()))
}

/// The value of `'...'` (quotes doubled inside, no backslash, no continuation over lines).
fn string(raw: &str) -> Option<String> {
    let inner = raw.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\'' && chars.next() != Some('\'') {
            return None;
        }
        out.push(c);
    }
    Some(out)
}

/// A byte no query text holds (the protocol ends it there), marking a literal in a key.
const MARK: char = '\0';

/// The cache key of `sql`: its text with each literal replaced by a mark and its kind.
fn key(sql: &str, lits: &[Literal]) -> String {
    let mut out = String::with_capacity(sql.len());
    key_into(sql, lits, &mut out);
    out
}

fn key_into(sql: &str, lits: &[Literal], out: &mut String) {
    out.clear();
    let mut at = 0;
    for l in lits {
        out.push_str(&sql[at..l.start]);
        out.push(MARK);
        out.push(match l.value {
            Const::Integer(_) => 'i',
            Const::Numeric(_) => 'n',
            _ => 's',
        });
        at = l.end;
    }
    out.push_str(&sql[at..]);
}

thread_local! {
    /// The key of the text being looked up (one per thread: no allocation per lookup).
    static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// One shape: its statements with `$k` for the k-th literal, and where each `$k` is in the
/// shape's text (to move statement locations to a text's own offsets).
#[derive(Debug)]
struct Shape {
    statements: Vec<Statement>,
    placeholders: Vec<(usize, usize)>,
    /// Where the `$k` are in a walk of the statements (see [`refill`]), and the expressions
    /// in that walk.
    slots: Vec<refill::Slot>,
    exprs: usize,
    /// The functions the shape calls: the same for all its texts.
    calls: Calls,
    /// The last text served and its parse (with the merge plans made for it).
    last: Mutex<Option<(String, Arc<Parsed>)>>,
    /// Per router (by id): whether it routes this shape by one literal (see [`super::point`]).
    points: Mutex<Vec<(u64, Option<Point>)>>,
}

impl Shape {
    /// The shape of `sql` when it serves every text of its key exactly (see the module doc),
    /// checked against `real`, the parse of `sql`.
    fn build(sql: &str, lits: &[Literal], real: &Arc<Parsed>) -> Option<Shape> {
        let mut placeholders = Vec::with_capacity(lits.len());
        let text = replaced(sql, lits, |k, _, text| {
            let start = text.len();
            // Spaced, so a literal next to a name never reads as part of it.
            text.push_str(&format!(" ${} ", k + 1));
            placeholders.push((start, text.len()));
        });
        let mut statements = parse_off_the_workers(&text).ok()?.statements;
        let (slots, exprs) = refill::slots(&mut statements);
        let shape = Shape {
            statements,
            placeholders,
            slots,
            exprs,
            calls: real.shared_calls(),
            last: Mutex::new(Some((sql.to_string(), real.clone()))),
            points: Mutex::new(Vec::new()),
        };
        if shape.instance(sql, lits)? != real.statements {
            return None;
        }
        // Repeated values cannot show which literal went where: check distinct ones too.
        let mut values: Vec<&Const> = lits.iter().map(|l| &l.value).collect();
        values.sort_by_key(|v| format!("{v:?}"));
        values.dedup();
        if values.len() < lits.len() {
            let other = replaced(sql, lits, |k, l, text| {
                text.push_str(&distinct(k, &l.value))
            });
            let other_lits = literals(&other)?;
            let other_real = parse_off_the_workers(&other).ok()?;
            if shape.instance(&other, &other_lits)? != other_real.statements {
                return None;
            }
        }
        Some(shape)
    }

    /// The statements of `sql` (a text of this shape whose literals are `lits`).
    fn instance(&self, sql: &str, lits: &[Literal]) -> Option<Vec<Statement>> {
        if lits.len() != self.placeholders.len() {
            return None;
        }
        let mut statements = self.statements.clone();
        let mut fill = Fill { lits, ok: true };
        statements.iter_mut().for_each(|st| st.walk_mut(&mut fill));
        (fill.ok && self.locate(&mut statements, sql, lits).is_some()).then_some(statements)
    }

    /// `router`'s point plan of this shape (`sql`: a text of it), made once per router.
    fn point(&self, router: &Router, sql: &str) -> Option<Point> {
        let mut points = self.points.lock();
        if let Some((_, p)) = points.iter().find(|(id, _)| *id == router.id()) {
            return *p;
        }
        let calls = calls_in(&self.calls, &self.statements, 0, sql);
        let p = router.point(&self.statements, sql, calls);
        // A few routers share a shape (databases, reloads): the oldest goes.
        if points.len() >= 16 {
            points.remove(0);
        }
        points.push((router.id(), p));
        p
    }

    /// Moves the statements' offsets (the shape's) to those of `sql`, whose literals are
    /// `lits`; `None` when one does not fit in `sql`.
    fn locate(&self, statements: &mut [Statement], sql: &str, lits: &[Literal]) -> Option<()> {
        // Statement offsets only grow: one pass over the placeholders for all of them.
        let mut offsets = Offsets {
            placeholders: &self.placeholders,
            lits,
            next: 0,
            moved: 0,
        };
        for (st, own) in statements.iter_mut().zip(&self.statements) {
            let start = offsets.of(own.location)?;
            let end = offsets.of(own.location + own.len)?;
            st.location = start;
            st.len = end.checked_sub(start)?;
        }
        statements
            .iter()
            .all(|st| sql.get(st.location..st.location + st.len).is_some())
            .then_some(())
    }
}

/// Offsets of the shape's text moved to a text whose literals are `lits`, asked in order.
struct Offsets<'a> {
    placeholders: &'a [(usize, usize)],
    lits: &'a [Literal],
    /// Placeholders before the last offset asked.
    next: usize,
    /// How far they moved it.
    moved: isize,
}

impl Offsets<'_> {
    fn of(&mut self, at: usize) -> Option<usize> {
        while let (Some(&(start, end)), Some(l)) =
            (self.placeholders.get(self.next), self.lits.get(self.next))
        {
            if end > at {
                break;
            }
            self.moved += (l.end - l.start) as isize - (end - start) as isize;
            self.next += 1;
        }
        usize::try_from(at as isize + self.moved).ok()
    }
}

/// `sql` with each literal replaced by what `put` writes for it (its index, the literal, the
/// text so far).
fn replaced(
    sql: &str,
    lits: &[Literal],
    mut put: impl FnMut(usize, &Literal, &mut String),
) -> String {
    let mut text = String::with_capacity(sql.len() + 4 * lits.len());
    let mut at = 0;
    for (k, l) in lits.iter().enumerate() {
        text.push_str(&sql[at..l.start]);
        put(k, l, &mut text);
        at = l.end;
    }
    text.push_str(&sql[at..]);
    text
}

/// A literal of the same kind as `value`, different for each `k`.
fn distinct(k: usize, value: &Const) -> String {
    match value {
        Const::Integer(_) => format!("{}", 1_000_000 + k),
        Const::Numeric(_) => format!("{}.5", 1_000_000 + k),
        _ => format!("'pgdog shape check {k}'"),
    }
}

/// Puts the literals in place of `$k` (the real text has no parameters: `max_param` 0).
struct Fill<'a> {
    lits: &'a [Literal],
    ok: bool,
}

impl VisitMut for Fill<'_> {
    fn statement(&mut self, st: &mut Statement) {
        st.max_param = 0;
    }

    fn expr(&mut self, e: &mut Expr) {
        if let Expr::Param(k) = e {
            match (*k as usize).checked_sub(1).and_then(|i| self.lits.get(i)) {
                Some(l) => *e = Expr::Const(l.value.clone()),
                None => self.ok = false,
            }
        }
    }
}

/// What [`ShapeCache::serve`] gives for a text.
pub enum Served {
    Parsed(Arc<Parsed>),
    /// A text of a shape its router routes by one literal: that literal, not parsed.
    Point(PointHit),
}

/// A text of a point shape (see [`super::point`]).
pub struct PointHit {
    pub(super) point: Point,
    pub(super) value: Const,
    shape: Arc<Shape>,
}

impl PointHit {
    /// The shape's statements (literals as `$k`): what the text's parse would be but for its
    /// literals.
    pub fn statements(&self) -> &[Statement] {
        &self.shape.statements
    }

    /// The shard `router` (the router that made the plan) sends the text `sql` to. Debug
    /// builds check it against the full route of a real parse, which wins if they differ
    /// (counted in `mismatches` and logged: the plan would have been wrong).
    pub fn shard(&self, router: &Router, sql: &str) -> Result<usize, RouterError> {
        let shard = router.point_shard(self.point, &self.value);
        if !cfg!(debug_assertions) {
            return shard;
        }
        let real = parse_off_the_workers(sql)
            .and_then(|p| router.route(&p, 0, sql, None, &Overrides::default()));
        let agrees = match (&shard, &real) {
            // Any shard when no row can match: round robin, so only the kind is compared.
            (Ok(_), Ok(Route::Shard(_))) if router.point_matches_none(self.point, &self.value) => {
                true
            }
            (Ok(a), Ok(Route::Shard(b))) => a == b,
            (Err(a), Err(b)) => a.code() == b.code() && a.to_string() == b.to_string(),
            _ => false,
        };
        if agrees {
            return shard;
        }
        ShapeCache::global().mismatches.fetch_add(1, Relaxed);
        tracing::error!("shape cache: the point plan of {sql:?} differs from its route ({real:?})");
        match real? {
            Route::Shard(s) => Ok(s),
            _ => shard,
        }
    }
}

#[derive(Debug, Clone)]
enum Entry {
    Shape(Arc<Shape>),
    /// Parsed every time (see the module doc).
    NotCacheable,
}

/// Shapes by key, hashed with foldhash (SipHash over each text was a tenth of the hit).
type Lru = LruCache<Box<str>, Entry, foldhash::fast::RandomState>;

fn lru(cap: NonZeroUsize) -> Lru {
    LruCache::with_hasher(cap, foldhash::fast::RandomState::default())
}

/// The process-wide cache of simple-protocol shapes, with its counters.
pub struct ShapeCache {
    /// None: off (`query_shape_cache_limit = 0`).
    lru: Mutex<Option<Lru>>,
    hits: AtomicU64,
    misses: AtomicU64,
    not_cacheable: AtomicU64,
    mismatches: AtomicU64,
    points: AtomicU64,
}

/// Counters of the shape cache (SHOW QUERY_CACHE, metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShapeStats {
    pub entries: usize,
    pub hits: u64,
    pub misses: u64,
    /// Texts parsed every time: a literal the cache does not take out, or a shape it cannot
    /// serve exactly.
    pub not_cacheable: u64,
    /// Hits whose statements differed from a real parse, quick scans that differed from the
    /// scanner's, and point plans that differed from the full route (checked in debug builds
    /// only).
    pub mismatches: u64,
    /// Hits served as point queries: routed by their key literal, not parsed (`point`).
    pub points: u64,
}

impl ShapeCache {
    pub fn new(capacity: usize) -> ShapeCache {
        ShapeCache {
            lru: Mutex::new(NonZeroUsize::new(capacity).map(lru)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            not_cacheable: AtomicU64::new(0),
            mismatches: AtomicU64::new(0),
            points: AtomicU64::new(0),
        }
    }

    pub fn global() -> &'static ShapeCache {
        static CACHE: OnceLock<ShapeCache> = OnceLock::new();
        CACHE.get_or_init(|| ShapeCache::new(4096))
    }

    /// The parsed form of a simple-protocol text: from its shape when cached, else parsed (and
    /// its shape kept). A text without literals, or not cacheable, goes to the text cache (as
    /// every text does when this cache is off).
    pub fn get(&self, sql: &str) -> Result<Arc<Parsed>, RouterError> {
        match self.serve(sql, None)? {
            Served::Parsed(p) => Ok(p),
            // Not without a router.
            Served::Point(_) => QueryCache::global().get(sql),
        }
    }

    /// `get`, except that a text of a cached shape `router` routes by one literal (see
    /// [`super::point`]) comes back as that literal and plan, with no parse made for it.
    pub fn serve(&self, sql: &str, router: Option<&Router>) -> Result<Served, RouterError> {
        if self.lru.lock().is_none() {
            return QueryCache::global().get(sql).map(Served::Parsed);
        }
        let lits = match literals(sql) {
            Some(lits) if !lits.is_empty() => lits,
            Some(_) => return QueryCache::global().get(sql).map(Served::Parsed),
            None => {
                self.not_cacheable.fetch_add(1, Relaxed);
                return QueryCache::global().get(sql).map(Served::Parsed);
            }
        };
        let entry = KEY.with_borrow_mut(|key| {
            key_into(sql, &lits, key);
            let entry = self
                .lru
                .lock()
                .as_mut()
                .and_then(|lru| lru.get(key.as_str()).cloned());
            // A long text's key is not kept for the next lookup.
            if key.capacity() > 4096 {
                *key = String::new();
            }
            entry
        });
        match entry {
            Some(Entry::Shape(shape)) => {
                if let Some(point) = router.and_then(|r| shape.point(r, sql)) {
                    if let Some(value) = lits.get(point.literal) {
                        self.hits.fetch_add(1, Relaxed);
                        self.points.fetch_add(1, Relaxed);
                        return Ok(Served::Point(PointHit {
                            point,
                            value: value.value.clone(),
                            shape,
                        }));
                    }
                }
                if let Some(parsed) = self.hit(&shape, sql, &lits) {
                    self.hits.fetch_add(1, Relaxed);
                    return parsed.map(Served::Parsed);
                }
            }
            Some(Entry::NotCacheable) => {
                self.not_cacheable.fetch_add(1, Relaxed);
                return QueryCache::global().get(sql).map(Served::Parsed);
            }
            None => {}
        }
        self.misses.fetch_add(1, Relaxed);
        let real = Arc::new(parse_off_the_workers(sql)?);
        let entry = match Shape::build(sql, &lits, &real) {
            Some(shape) => Entry::Shape(Arc::new(shape)),
            None => {
                self.not_cacheable.fetch_add(1, Relaxed);
                Entry::NotCacheable
            }
        };
        if let Some(lru) = self.lru.lock().as_mut() {
            lru.put(key(sql, &lits).into_boxed_str(), entry);
        }
        Ok(Served::Parsed(real))
    }

    /// The parse of `sql` from `shape` (None: it does not fit, parse it). The last text's
    /// parse takes this one's literals in place when nobody else holds it (see [`refill`]),
    /// else the shape's statements are copied.
    fn hit(
        &self,
        shape: &Shape,
        sql: &str,
        lits: &[Literal],
    ) -> Option<Result<Arc<Parsed>, RouterError>> {
        let previous = {
            let mut last = shape.last.lock();
            if let Some((_, parsed)) = last.as_ref().filter(|(t, _)| t == sql) {
                return Some(Ok(parsed.clone()));
            }
            last.take()
        };
        let (mut text, reused) = match previous {
            Some((text, mut parsed)) => {
                let refilled = Arc::get_mut(&mut parsed)
                    .is_some_and(|p| refill::refill(shape, p, sql, lits).is_some());
                (text, refilled.then_some(parsed))
            }
            None => (String::new(), None),
        };
        let parsed = match reused {
            Some(parsed) => parsed,
            None => {
                let statements = shape.instance(sql, lits)?;
                Arc::new(Parsed::with_calls(sql, statements, shape.calls.clone()))
            }
        };
        let parsed = self.checked(sql, parsed);
        if let Ok(p) = &parsed {
            text.clear();
            text.push_str(sql);
            *shape.last.lock() = Some((text, p.clone()));
        }
        Some(parsed)
    }

    /// Debug builds: a hit is compared with a real parse of its text, which wins if they
    /// differ (counted and logged: the cache would have been wrong).
    fn checked(&self, sql: &str, hit: Arc<Parsed>) -> Result<Arc<Parsed>, RouterError> {
        if !cfg!(debug_assertions) {
            return Ok(hit);
        }
        let real = parse_off_the_workers(sql)?;
        if real.statements == hit.statements
            && real.shard_comment == hit.shard_comment
            && real.key_comment == hit.key_comment
        {
            return Ok(hit);
        }
        self.mismatches.fetch_add(1, Relaxed);
        tracing::error!("shape cache: a hit differs from the parse of {sql:?}");
        Ok(Arc::new(real))
    }

    /// Sets the number of shapes kept (`query_shape_cache_limit`), dropping the least recent;
    /// 0 turns the cache off.
    pub fn resize(&self, capacity: usize) {
        let mut lru = self.lru.lock();
        match (NonZeroUsize::new(capacity), lru.as_mut()) {
            (None, _) => *lru = None,
            (Some(cap), Some(l)) if l.cap() != cap => l.resize(cap),
            (Some(_), Some(_)) => {}
            (Some(cap), None) => *lru = Some(self::lru(cap)),
        }
    }

    pub fn stats(&self) -> ShapeStats {
        ShapeStats {
            entries: self.lru.lock().as_ref().map_or(0, |l| l.len()),
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            not_cacheable: self.not_cacheable.load(Relaxed),
            mismatches: self.mismatches.load(Relaxed),
            points: self.points.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests;
