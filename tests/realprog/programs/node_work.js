// JIT-compiled work on large typed arrays and many small objects; prints checksums.
// usage: node node_work.js MILLIONS
'use strict';
const n = Math.floor(parseFloat(process.argv[2] || '4') * 1e6);
let x = 12345;
function next() { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x; }
const values = new Float64Array(n);
for (let i = 0; i < n; i++) values[i] = next() / 4294967296;
const order = new Uint32Array(n);
for (let i = 0; i < n; i++) order[i] = next() % n;
let acc = 0;
for (let round = 0; round < 4; round++)
  for (let i = 0; i < n; i++) acc += values[order[i]] * (round + 1);
const buckets = new Map();
for (let i = 0; i < n / 8; i++) {
  const k = order[i] % 65536;
  const b = buckets.get(k);
  if (b) b.count++; else buckets.set(k, {count: 1, first: i});
}
let bsum = 0;
for (const [k, b] of buckets) bsum = (bsum + k * b.count + b.first) % 1000000007;
const sorted = Float64Array.from(values.subarray(0, n / 4)).sort();
console.log('acc', acc.toPrecision(12));
console.log('buckets', buckets.size, bsum);
console.log('median', sorted[sorted.length >> 1].toPrecision(12));
