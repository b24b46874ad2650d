//! iostat's busy periods (sql/_iostat_build.sql): the islands of overlapping [first Q, C] spans
//! of the requests the disk statistics count, per device. %util is the share of an interval
//! that islands cover. DuckDB found them with a window over every request sorted by its start;
//! the requests arrive almost in that order (the pass writes them at their completion), which
//! a run-aware sort takes in about one look.

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

/// A device's spans, collected before they are sorted.
#[derive(Debug)]
pub struct DeviceSpans {
    pub major: i32,
    pub minor: i32,
    spans: Vec<Span>,
}

/// The spans of every device, as batches of requests bring them.
#[derive(Debug, Default)]
pub struct SpansByDevice {
    devices: Vec<DeviceSpans>,
}

impl SpansByDevice {
    /// Add one request's span to its device (devices are few: found by a look at each).
    pub fn add(&mut self, major: i32, minor: i32, span: Span) {
        let found = self
            .devices
            .iter()
            .rposition(|d| d.major == major && d.minor == minor);
        let index = match found {
            Some(i) => i,
            None => {
                self.devices.push(DeviceSpans {
                    major,
                    minor,
                    spans: Vec::new(),
                });
                self.devices.len() - 1
            }
        };
        self.devices[index].spans.push(span);
    }

    /// Every device's islands, devices in the order they first came.
    pub fn islands(self) -> Vec<(i32, i32, Vec<Island>)> {
        self.devices
            .into_iter()
            .map(|d| (d.major, d.minor, islands(d.spans)))
            .collect()
    }
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

    #[test]
    fn no_spans_no_islands() {
        assert!(islands(Vec::new()).is_empty());
    }

    #[test]
    fn spans_are_kept_per_device() {
        let mut by = SpansByDevice::default();
        by.add(8, 0, span(0, 5));
        by.add(8, 16, span(1, 2));
        by.add(8, 0, span(4, 9));
        let got = by.islands();
        assert_eq!(
            got,
            vec![(8, 0, vec![island(0, 9)]), (8, 16, vec![island(1, 2)])]
        );
    }
}
