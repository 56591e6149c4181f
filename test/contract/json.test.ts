import { describe, expect, it } from 'vitest';
import { compareKeys, sameJson, sortedKeys } from '../../src/contract/json.js';

describe('sameJson', () => {
  it('is true for equal JSON whatever the key order, at any depth', () => {
    expect(sameJson({ a: 1, b: [1, { c: 'x', d: null }] }, { b: [1, { d: null, c: 'x' }], a: 1 })).toBe(true);
    expect(sameJson([[1, 2], [3]], [[1, 2], [3]])).toBe(true);
    expect(sameJson([], [])).toBe(true);
    expect(sameJson({}, {})).toBe(true);
    expect(sameJson(null, null)).toBe(true);
    expect(sameJson('x', 'x')).toBe(true);
  });

  it('tells an array from an object with the same entries, both ways round', () => {
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson({ 0: 1 }, [1])).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson({}, [])).toBe(false);
  });

  it('tells arrays of different lengths apart, whichever is longer', () => {
    expect(sameJson([1, 2], [1, 2, 3])).toBe(false);
    expect(sameJson([1, 2, 3], [1, 2])).toBe(false);
    expect(sameJson([], [null])).toBe(false);
  });

  it('compares array order, also inside nested arrays', () => {
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson([[1, 2]], [[2, 1]])).toBe(false);
    expect(sameJson([[1], [2]], [[1], [3]])).toBe(false);
  });

  it('tells null, {} and primitives apart', () => {
    expect(sameJson(null, {})).toBe(false);
    expect(sameJson({}, null)).toBe(false);
    expect(sameJson(null, [])).toBe(false);
    expect(sameJson(1, '1')).toBe(false);
    expect(sameJson(0, false)).toBe(false);
    expect(sameJson({ a: 1 }, 1)).toBe(false);
    expect(sameJson('a', { a: 1 })).toBe(false);
    // A primitive has no entries, like {}: still not the same JSON.
    expect(sameJson(1, {})).toBe(false);
    expect(sameJson('', {})).toBe(false);
    expect(sameJson({}, true)).toBe(false);
  });

  it('tells objects with different keys or key counts apart, either way round', () => {
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJson({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(sameJson({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameJson({ a: { b: 1 } }, { a: { b: 2 } })).toBe(false);
  });
});

describe('compareKeys', () => {
  it('is 0 for equal strings, including the empty string', () => {
    expect(compareKeys('', '')).toBe(0);
    expect(compareKeys('abc', 'abc')).toBe(0);
    expect(compareKeys('\u{1F600}', '\u{1F600}')).toBe(0);
  });

  it('orders a prefix before the longer string', () => {
    expect(compareKeys('a', 'ab')).toBeLessThan(0);
    expect(compareKeys('ab', 'a')).toBeGreaterThan(0);
    expect(compareKeys('', 'a')).toBeLessThan(0);
  });

  it('orders by the first differing character, with the sign saying which is first', () => {
    expect(compareKeys('a', 'b')).toBeLessThan(0);
    expect(compareKeys('b', 'a')).toBeGreaterThan(0);
    expect(compareKeys('ab', 'ac')).toBeLessThan(0);
    expect(compareKeys('ac', 'ab')).toBeGreaterThan(0);
    expect(compareKeys('b', 'ab')).toBeGreaterThan(0); // first character decides, not length
  });

  // By code point (UTF-8 byte order) U+1F600 comes after U+FFFF, although its first UTF-16
  // unit (0xd83d) is below 0xffff. This is where compareKeys differs from plain sort().
  it('orders characters above U+FFFF after U+E000..U+FFFF, both ways round', () => {
    expect(compareKeys('\u{1F600}', '\uffff')).toBeGreaterThan(0);
    expect(compareKeys('\uffff', '\u{1F600}')).toBeLessThan(0);
    expect(compareKeys('\ue000', '\u{10000}')).toBeLessThan(0);
    expect(compareKeys('\u{10000}', '\ue000')).toBeGreaterThan(0);
    expect(compareKeys('x\u{10FFFF}', 'x\ufffd')).toBeGreaterThan(0);
  });

  it('treats exactly 0xd800..0xdfff as surrogate units', () => {
    // U+D7FF is an ordinary character, below every astral one.
    expect(compareKeys('\ud7ff', '\u{10000}')).toBeLessThan(0);
    expect(compareKeys('\ud7ff', '\ue000')).toBeLessThan(0);
    // U+10000 starts with 0xd800, the lowest surrogate unit.
    expect(compareKeys('\u{10000}', '\ue000')).toBeGreaterThan(0);
    // 0xdfff, the highest surrogate unit, as the first difference after a shared high surrogate.
    expect(compareKeys('\ud800\udfff', '\ud800\ue000')).toBeGreaterThan(0);
    expect(compareKeys('\ud800\ue000', '\ud800\udfff')).toBeLessThan(0);
    // Two astral characters compare as their code points do.
    expect(compareKeys('\u{10000}', '\u{1F600}')).toBeLessThan(0);
  });
});

describe('sortedKeys', () => {
  it('sorts any iterable by code point, leaving the input alone', () => {
    const keys = ['b', '\u{1F600}', 'ab', '\uffff', 'a', '', '\ue000'];
    expect(sortedKeys(keys)).toEqual(['', 'a', 'ab', 'b', '\ue000', '\uffff', '\u{1F600}']);
    expect(keys[0]).toBe('b');
    expect(sortedKeys(new Set(['z', 'y']))).toEqual(['y', 'z']);
  });
});
