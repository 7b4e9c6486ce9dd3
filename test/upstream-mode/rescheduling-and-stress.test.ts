// Upstream's tables in test/conformance/rescheduling-and-stress.test.ts, with capacityAccounting = upstream: that mode is exactly upstream's check.
process.env.TEST_CAPACITY_ACCOUNTING = 'upstream';
await import('../conformance/rescheduling-and-stress.test.ts');
