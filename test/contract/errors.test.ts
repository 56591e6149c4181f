import { describe, expect, it } from 'vitest';
import { TaskStoreError } from '../../src/contract/errors.js';

describe('TaskStoreError', () => {
  // Logs and error reporters show `name`; it must say what the error is, not just "Error".
  it('is an Error named TaskStoreError with its kind, message and cause', () => {
    const cause = new Error('underlying');
    const error = new TaskStoreError('invalid_input', 'bad thing', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('TaskStoreError');
    expect(error.kind).toBe('invalid_input');
    expect(error.message).toBe('bad thing');
    expect(error.cause).toBe(cause);
    expect(String(error)).toBe('TaskStoreError: bad thing');
  });
});
