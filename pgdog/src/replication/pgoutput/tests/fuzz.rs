//! Deterministic fuzzing: random bytes, every truncation and random mutations of every
//! sample message. The decoder must return Ok or Err, never panic; JSON must always render.

use bytes::Bytes;

use super::fixtures;
use super::unhex;
use crate::replication::pgoutput::*;

/// xorshift64*: small, deterministic, good enough to shake a parser.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Decodes and, when it succeeds, renders JSON: both must not panic.
fn poke(d: &mut Decoder, data: Vec<u8>) -> bool {
    match d.decode(0x1_0000_0000, Bytes::from(data)) {
        Ok(msg) => {
            let json = d.to_json(&msg, 0x1_0000_0000);
            assert!(json.starts_with('{') && json.ends_with('}'));
            true
        }
        Err(e) => {
            assert!(e.to_string().starts_with("pgoutput message '"));
            false
        }
    }
}

/// Every captured message, with the decoder state it was decoded in.
fn samples() -> Vec<(Decoder, Vec<u8>)> {
    let mut out = Vec::new();
    for fixture in fixtures::ALL.iter() {
        let mut d = Decoder::new(fixture.proto_version);
        for (_, hex) in &fixture.messages {
            let data = unhex(hex);
            out.push((d.clone(), data.clone()));
            d.decode(0, Bytes::from(data)).unwrap();
        }
    }
    out
}

#[test]
fn every_truncation_of_every_sample() {
    for (decoder, data) in samples() {
        let mut oks = 0;
        for len in 0..data.len() {
            let mut d = decoder.clone();
            if poke(&mut d, data[..len].to_vec()) {
                oks += 1;
            }
        }
        // Only a v4 Stream Abort has a shorter valid form (without abort LSN and time).
        assert!(oks == 0 || data[0] == b'A', "prefix of {data:02x?} decoded");
        // Every extension by one byte is an error too (trailing bytes).
        let mut longer = data.clone();
        longer.push(0);
        assert!(!poke(&mut decoder.clone(), longer));
    }
}

#[test]
fn random_mutations_of_samples() {
    let samples = samples();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..100_000 {
        let (decoder, data) = &samples[rng.below(samples.len())];
        let mut data = data.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(data.len());
            data[i] = match rng.below(4) {
                0 => rng.next() as u8,
                1 => data[i] ^ (1 << rng.below(8)),
                2 => 0xff,
                _ => 0,
            };
        }
        poke(&mut decoder.clone(), data);
    }
}

#[test]
fn random_bytes() {
    const KINDS: &[u8] = b"BCORYIUDTMSEcAbPKrp";
    let mut rng = Rng(42);
    // Decoders in interesting states: fresh, with a relation known, inside a stream.
    let samples = samples();
    let states: Vec<Decoder> = (0..samples.len())
        .step_by(7)
        .map(|i| samples[i].0.clone())
        .chain((1..=5).map(Decoder::new))
        .collect();
    for _ in 0..200_000 {
        let mut d = states[rng.below(states.len())].clone();
        let len = rng.below(48);
        let mut data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if let Some(first) = data.first_mut() {
            if rng.below(8) != 0 {
                *first = KINDS[rng.below(KINDS.len())];
            }
        }
        // Small lengths and counts are likelier to reach deep into the parser.
        if len > 8 && rng.below(2) == 0 {
            let i = 1 + rng.below(len - 4);
            data[i..i + 3].fill(0);
        }
        poke(&mut d, data);
    }
}
