//! CPU twin of `shaders/chain.comp` and `cuda/chain.cu`: the chain of subgroup operations,
//! subgroup by subgroup, at any subgroup size.

use crate::spec::throughput::ChainOp;

/// Thread `t`'s first value (and addend): `(t * 0x9e3779b9) ^ seed`, `t` modulo 2^32.
pub fn initial(t: usize, seed: u32) -> u32 {
    (t as u32).wrapping_mul(0x9e37_79b9) ^ seed
}

/// One link for a whole subgroup: `v` holds every lane's value (its length is the subgroup
/// size), `c` every lane's addend; `out` receives the lanes' new values.
pub fn link(op: ChainOp, v: &[u32], c: &[u32], out: &mut [u32]) {
    let s = v.len();
    let ballot = if op == ChainOp::Ballot {
        (0..s.min(32))
            .filter(|&l| v[l] & 1 != 0)
            .fold(0u32, |b, l| b | 1 << l)
    } else {
        0
    };
    for (lane, o) in out.iter_mut().enumerate() {
        let r = match op {
            ChainOp::Broadcast => v[1],
            ChainOp::Up => v[lane.saturating_sub(1)],
            ChainOp::Down => v[(lane + 1).min(s - 1)],
            ChainOp::Xor => v[lane ^ 1],
            ChainOp::Ballot => ballot,
        };
        *o = r.wrapping_add(c[lane]);
    }
}

/// What [`crate::throughput::chain`] writes into `n` elements on a device whose subgroups
/// have `subgroup_size` lanes (32 on CUDA; an even number ≥ 2): thread `t` is lane
/// `t % subgroup_size`, the missing lanes of a partial last subgroup run the chain too.
///
/// # Panics
///
/// When `subgroup_size` is odd or below 2 (no device has such subgroups).
pub fn chain(op: ChainOp, iters: u32, seed: u32, subgroup_size: u32, n: usize) -> Vec<u32> {
    let s = subgroup_size as usize;
    assert!(
        s >= 2 && s.is_multiple_of(2),
        "subgroup_size {s}: allowed even sizes from 2"
    );
    let mut out = Vec::with_capacity(n);
    let (mut c, mut v, mut next) = (vec![0; s], vec![0; s], vec![0; s]);
    for first in (0..n).step_by(s) {
        for (lane, x) in c.iter_mut().enumerate() {
            *x = initial(first + lane, seed);
        }
        v.copy_from_slice(&c);
        for _ in 0..iters {
            link(op, &v, &c, &mut next);
            std::mem::swap(&mut v, &mut next);
        }
        out.extend_from_slice(&v[..s.min(n - first)]);
    }
    out
}
