mod common;
use common::for_each_device;
use xwarp::sort::{all_bits, argsort_host, sort_keys_host, SortOrder};
use xwarp::Rng;

#[test]
fn smoke() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut rng = Rng::new(1);
        for n in [1usize, 2, 31, 33, 4097, 100_003] {
            let keys: Vec<u32> = rng.vec(n);
            let got = sort_keys_host(dev, &keys, SortOrder::Ascending, all_bits::<u32>()).unwrap();
            let want = xwarp::cpu::sort::sort_keys(&keys, SortOrder::Ascending, all_bits::<u32>());
            let bad = (0..n).find(|&i| got[i] != want[i]);
            assert!(bad.is_none(), "n {n}: first wrong {bad:?}");
            let got = argsort_host(dev, &keys, SortOrder::Descending, 3..29).unwrap();
            let want = xwarp::cpu::sort::argsort(&keys, SortOrder::Descending, 3..29);
            let bad = (0..n).find(|&i| got[i] as usize != want[i]);
            assert!(bad.is_none(), "argsort n {n}: first wrong {bad:?}");
        }
    });
}
