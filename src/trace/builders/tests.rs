//! Unit tests of the trace builders: parts row for row, ids beyond 32 bits, names held once per name.

use super::*;

fn op(start_ns: i64) -> OpRow {
    OpRow {
        device: 0,
        stream: 7,
        pid: 1,
        start_ns,
        end_ns: start_ns + 10,
        name_id: 0,
        short_id: 0,
        kind: OpKind::Kernel,
        correlation_id: 5,
        graph_id: -1,
        bytes: 0,
    }
}

#[test]
fn parts_with_and_without_geometry_stay_row_for_row() {
    let l = Launch {
        grid: [4, 2, 1],
        block: [128, 1, 1],
    };
    let mut a = OpsBuilder::default().with_geometry();
    a.push_launch(op(0), l);
    a.push(op(10));
    let mut b = OpsBuilder::default();
    b.push(op(20));
    b.push_launch(op(30), l); // no geometry kept here
    a.append(&mut b);
    assert!(b.is_empty());
    a.truncate(3);
    let g = a.geometry.as_ref().unwrap();
    assert_eq!(g.grid_x, vec![4, 0, 0]);
    assert_eq!(g.block_x, vec![128, 0, 0]);
    let df = a.finish().unwrap();
    assert_eq!((df.height(), df.width()), (3, 17));
    // finish_ops moves the short names out of the frame (tested below).
    assert_eq!(
        df.column(col::START)
            .unwrap()
            .i64()
            .unwrap()
            .cont_slice()
            .unwrap(),
        &[0, 10, 20]
    );
}

#[test]
fn ids_beyond_32_bits_read_as_unknown_and_are_counted() {
    let big = OpRow {
        correlation_id: 1 << 31,
        stream: i64::from(i32::MAX),
        ..op(0)
    };
    // Narrow builder: counted at push, stored as -1; the largest i32 is kept.
    let mut a = OpsBuilder::default();
    a.push(big);
    a.push(op(10));
    assert_eq!(a.correlation_id, vec![-1, 5]);
    assert_eq!(a.stream, vec![i32::MAX, 7]);
    assert_eq!(a.out_of_range(), 1);
    // Appending keeps both parts' counts, into an empty builder too.
    let mut b = OpsBuilder::default();
    b.push(big);
    a.append(&mut b);
    let mut empty = OpsBuilder::default();
    empty.append(&mut a);
    assert_eq!(empty.out_of_range(), 2);
    // Wide builder (a reader that narrows at the end): counted before, -1 in the frame.
    let mut w = OpsBuilderOf::<i64>::default();
    w.push(big);
    w.push(OpRow {
        pid: -(1 << 40),
        ..op(20)
    });
    assert_eq!(w.correlation_id, vec![1 << 31, 5]);
    assert_eq!(w.out_of_range(), 2);
    let df = w.finish().unwrap();
    let corr = df.column(col::CORR).unwrap().i32().unwrap();
    assert_eq!(corr.cont_slice().unwrap(), &[-1, 5]);
    let pid = df.column(col::PID).unwrap().i32().unwrap();
    assert_eq!(pid.cont_slice().unwrap(), &[1, -1]);
}

#[test]
fn short_names_are_held_per_name_and_conflicts_counted() {
    // Names 0 and 2 with shorts 5 and 6; a third op of name 0 says 9 (a conflict).
    let s = NameTable::from_rows(&[0, 2, 0, 0], &[5, 6, 5, 9]);
    assert_eq!((s.of(0), s.of(2)), (5, 6));
    // No op of names 1 and 7: the name is its own short name.
    assert_eq!((s.of(1), s.of(7)), (1, 7));
    assert_eq!(s.conflicts, 1);
    // The frame leaves the column out; the table keeps what it said.
    let mut b = OpsBuilder::default();
    b.push(OpRow {
        name_id: 3,
        short_id: 4,
        ..op(0)
    });
    let (df, shorts) = b.finish_ops().unwrap();
    assert!(df.column(col::SHORT).is_err());
    assert_eq!(shorts.of(3), 4);
}

#[test]
fn a_calls_api_is_held_per_name() {
    let call = |name_id, api| CallRow {
        pid: 1,
        tid: 2,
        start_ns: 0,
        end_ns: 1,
        name_id,
        correlation_id: 3,
        api,
    };
    let mut b = CallsBuilder::default();
    b.push(call(0, CallApi::Runtime));
    b.push(call(1, CallApi::Driver));
    b.push(call(1, CallApi::Driver));
    let (df, apis) = b.finish_calls().unwrap();
    assert!(df.column(col::API).is_err());
    assert_eq!(df.height(), 3);
    assert_eq!(apis.of_or(1, 9), CallApi::Driver as u32);
    assert_eq!(apis.of_or(0, 9), CallApi::Runtime as u32);
    assert_eq!((apis.of_or(2, 9), apis.conflicts), (9, 0));
}

/// The columns copied on several threads are the serial append's, row for row, with the
/// geometry group and the out-of-range count carried over.
#[test]
fn append_on_threads_equals_the_serial_append() {
    let l = Launch {
        grid: [4, 2, 1],
        block: [128, 1, 1],
    };
    let part = |from: i64, n: i64| {
        let mut b = OpsBuilder::default().with_geometry();
        for k in 0..n {
            let row = OpRow {
                name_id: k as u32 % 7,
                correlation_id: if k == 3 { 1 << 31 } else { from + k },
                ..op(from + k)
            };
            if k % 2 == 0 {
                b.push_launch(row, l);
            } else {
                b.push(row);
            }
        }
        b
    };
    for threads in [1, 2, 3, 8] {
        let (mut serial, mut on) = (part(0, 5), part(0, 5));
        serial.append(&mut part(100, 9));
        on.append_on(&mut part(100, 9), threads);
        assert_eq!(on.out_of_range(), serial.out_of_range(), "{threads}");
        assert_eq!(on.out_of_range(), 2);
        let (a, b) = (serial.finish().unwrap(), on.finish().unwrap());
        assert_eq!(a.height(), 14);
        assert!(a.equals_missing(&b), "{threads} threads");
    }
}
