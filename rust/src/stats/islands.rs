//! iostat's busy periods (sql/_iostat_build.sql): the islands of overlapping [first Q, C] spans
//! of the requests the disk statistics count, per device. %util is the share of an interval
//! that islands cover. DuckDB found them with a window over every request sorted by its start.
//! The pass writes each request at its completion, so the spans come in runs ordered by their
//! ends (DuckDB hands a file's parts over in any order): `Sweep` merges each span into the
//! islands as it comes, and the runs' islands are merged at the end, without a sort of the
//! spans. That is the union of the spans, which is what the SQL window's islands are when every
//! span ends at or after its start; a span that does not (a corrupt trace) takes the exact
//! definition, `islands`, over every span sorted.

/// One request's time in flight, as %util counts it: from its own first Q to its C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span {
    pub from: i64,
    pub to: i64,
}

/// One busy period: from the start of the span that opens it to the latest end before the
/// next one opens (the device's last completion for the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Island {
    pub lo: i64,
    pub hi: i64,
}

/// Something kept per device (its spans, or its sweep): devices are few, found by a look at
/// each.
#[derive(Debug)]
pub struct ByDevice<T> {
    pub devices: Vec<(i32, i32, T)>,
}

impl<T> Default for ByDevice<T> {
    fn default() -> Self {
        ByDevice {
            devices: Vec::new(),
        }
    }
}

impl<T: Default> ByDevice<T> {
    /// What is kept for the device (major, minor), made when it first comes.
    pub fn of(&mut self, major: i32, minor: i32) -> &mut T {
        let found = self
            .devices
            .iter()
            .rposition(|d| d.0 == major && d.1 == minor);
        let index = found.unwrap_or_else(|| {
            self.devices.push((major, minor, T::default()));
            self.devices.len() - 1
        });
        &mut self.devices[index].2
    }
}

/// One device's islands, swept from its spans in runs ordered by their ends.
#[derive(Debug, Default)]
pub struct Sweep {
    /// the islands of the runs before the current one
    done: Vec<Island>,
    /// the current run's islands, in order
    run: Vec<Island>,
}

impl Sweep {
    /// Take one span (which ends at or after its start). It ends at or after every island of
    /// the run so far, or it starts a new run: so it joins exactly the run's last islands that
    /// end at or after its start (a span starting where an island ends joins it).
    pub fn take(&mut self, span: Span) {
        if self.run.last().is_some_and(|last| span.to < last.hi) {
            self.done.append(&mut self.run);
        }
        let mut lo = span.from;
        while let Some(last) = self.run.last() {
            if last.hi < span.from {
                break;
            }
            lo = lo.min(last.lo);
            self.run.pop();
        }
        self.run.push(Island { lo, hi: span.to });
    }

    /// The islands of every span taken, in order.
    pub fn islands(mut self) -> Vec<Island> {
        if self.done.is_empty() {
            return self.run;
        }
        self.done.append(&mut self.run);
        union(self.done)
    }
}

/// The union of islands (each ends at or after its start): those that overlap or touch merged.
pub fn union(mut islands: Vec<Island>) -> Vec<Island> {
    // stable sort: it merges the runs the islands already come in
    islands.sort_by_key(|i| i.lo);
    let mut out: Vec<Island> = Vec::with_capacity(islands.len());
    for island in islands {
        match out.last_mut() {
            Some(last) if island.lo <= last.hi => last.hi = last.hi.max(island.hi),
            _ => out.push(island),
        }
    }
    out
}

/// The islands of one device's spans, as the SQL window defines them: in (start, end) order, a
/// span opens an island when it starts after every span before it has ended (a span starting
/// where another ends does not); an island ends at the latest end of the spans before the next
/// opener, the last at the latest end of all. The order of equal spans does not matter.
pub fn islands(mut spans: Vec<Span>) -> Vec<Island> {
    // stable sort: it merges the runs the input already has
    spans.sort();
    let mut out: Vec<Island> = Vec::new();
    let mut reach: Option<i64> = None; // the latest end of the spans so far
    for span in spans {
        match reach {
            Some(before) if span.from <= before => {}
            _ => {
                if let (Some(last), Some(before)) = (out.last_mut(), reach) {
                    last.hi = before;
                }
                out.push(Island {
                    lo: span.from,
                    hi: span.to,
                });
            }
        }
        reach = Some(reach.map_or(span.to, |r| r.max(span.to)));
    }
    if let (Some(last), Some(before)) = (out.last_mut(), reach) {
        last.hi = before;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(from: i64, to: i64) -> Span {
        Span { from, to }
    }

    fn island(lo: i64, hi: i64) -> Island {
        Island { lo, hi }
    }

    #[test]
    fn overlapping_spans_make_one_island() {
        let got = islands(vec![span(5, 9), span(0, 6), span(8, 12)]);
        assert_eq!(got, vec![island(0, 12)]);
    }

    #[test]
    fn a_span_starting_where_another_ends_joins_it() {
        assert_eq!(islands(vec![span(0, 5), span(5, 7)]), vec![island(0, 7)]);
    }

    #[test]
    fn a_gap_opens_a_new_island() {
        let got = islands(vec![span(10, 12), span(0, 5), span(3, 4), span(6, 8)]);
        assert_eq!(got, vec![island(0, 5), island(6, 8), island(10, 12)]);
    }

    #[test]
    fn a_span_inside_an_earlier_one_does_not_end_its_island() {
        assert_eq!(islands(vec![span(0, 10), span(2, 3)]), vec![island(0, 10)]);
    }

    fn swept(spans: &[Span]) -> Vec<Island> {
        let mut sweep = Sweep::default();
        for &s in spans {
            sweep.take(s);
        }
        sweep.islands()
    }

    #[test]
    fn a_sweep_in_the_order_of_the_ends_merges_as_it_goes() {
        let spans = [
            span(0, 5),
            span(6, 8),
            span(4, 9),
            span(11, 12),
            span(12, 12),
        ];
        assert_eq!(swept(&spans), vec![island(0, 9), island(11, 12)]);
        assert_eq!(swept(&spans), islands(spans.to_vec()));
    }

    #[test]
    fn runs_out_of_order_are_merged_at_the_end() {
        // two runs, as two parts of a file handed over the other way round
        let spans = [
            span(20, 25),
            span(24, 30),
            span(0, 5),
            span(3, 21),
            span(40, 41),
        ];
        assert_eq!(swept(&spans), vec![island(0, 30), island(40, 41)]);
        assert_eq!(swept(&spans), islands(spans.to_vec()));
    }

    #[test]
    fn sweeping_runs_in_any_order_gives_the_windows_islands() {
        // spans that end at or after their start, cut into runs ordered by their ends and
        // handed over in a scrambled order: a pseudo-random trial of many such
        let mut seed: u64 = 7;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..200 {
            let mut spans: Vec<Span> = (0..next(60))
                .map(|_| {
                    let from = next(1000) as i64;
                    span(from, from + next(40) as i64)
                })
                .collect();
            spans.sort_by_key(|s| s.to);
            let mut runs: Vec<Vec<Span>> = Vec::new();
            for s in &spans {
                match runs.last_mut() {
                    Some(run) if next(8) != 0 => run.push(*s),
                    _ => runs.push(vec![*s]),
                }
            }
            runs.reverse();
            let handed: Vec<Span> = runs.into_iter().flatten().collect();
            assert_eq!(swept(&handed), islands(spans.clone()));
        }
    }

    #[test]
    fn the_union_merges_islands_that_touch() {
        let got = union(vec![island(5, 7), island(0, 5), island(8, 9)]);
        assert_eq!(got, vec![island(0, 7), island(8, 9)]);
    }

    #[test]
    fn a_span_ending_before_it_starts_counts_as_the_window_does() {
        // sorted by start, (4, 2) opens an island (after 0..3), whose end is the reach before
        // the next opener: 3, the most any span before it reached
        let got = islands(vec![span(0, 3), span(4, 2), span(5, 6)]);
        assert_eq!(got, vec![island(0, 3), island(4, 3), island(5, 6)]);
    }

    #[test]
    fn no_spans_no_islands() {
        assert!(islands(Vec::new()).is_empty());
    }

    #[test]
    fn spans_are_kept_per_device() {
        let mut by: ByDevice<Sweep> = ByDevice::default();
        by.of(8, 0).take(span(0, 5));
        by.of(8, 16).take(span(1, 2));
        by.of(8, 0).take(span(4, 9));
        let got: Vec<_> = by
            .devices
            .into_iter()
            .map(|(major, minor, s)| (major, minor, s.islands()))
            .collect();
        assert_eq!(
            got,
            vec![(8, 0, vec![island(0, 9)]), (8, 16, vec![island(1, 2)])]
        );
    }
}
