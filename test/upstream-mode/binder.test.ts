// Upstream's tables in test/volumes/binder.test.ts, with capacityAccounting = upstream: that mode is exactly upstream's check.
process.env.TEST_CAPACITY_ACCOUNTING = 'upstream';
await import('../volumes/binder.test.ts');
