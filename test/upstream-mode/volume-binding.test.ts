// Upstream's tables in test/plugins/volume-binding.test.ts, with capacityAccounting = upstream: that mode is exactly upstream's check.
process.env.TEST_CAPACITY_ACCOUNTING = 'upstream';
await import('../plugins/volume-binding.test.ts');
