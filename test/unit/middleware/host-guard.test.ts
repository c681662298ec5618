import { describe, expect, it } from 'vitest';
import { hostName, isLoopbackHost } from '../../../middleware/host-guard.js';
import { isJsonMediaType } from '../../../middleware/json-content-type.js';

describe('Host names', () => {
  it('strips the port and IPv6 brackets, lower-cased', () => {
    expect(hostName('LocalHost:8080')).toBe('localhost');
    expect(hostName('[::1]:8080')).toBe('::1');
    expect(hostName('::1')).toBe('::1');
    expect(hostName('example.com')).toBe('example.com');
  });

  it('knows the loopback names, and nothing that only looks like one', () => {
    for (const host of ['localhost', 'localhost:1', 'app.localhost:80', '127.0.0.1:8080', '127.1.2.3', '[::1]:9']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['localhost.evil.com', '127.0.0.1.nip.io', 'evil.com', '0.0.0.0:8080', '10.0.0.1', '[::]:1']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe('JSON media types', () => {
  it('accepts application/json and +json types with parameters, refuses what a page can send without preflight', () => {
    expect(isJsonMediaType('application/json')).toBe(true);
    expect(isJsonMediaType('Application/JSON; charset=utf-8')).toBe(true);
    expect(isJsonMediaType('application/merge-patch+json')).toBe(true);
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', undefined]) {
      expect(isJsonMediaType(type), String(type)).toBe(false);
    }
  });
});
