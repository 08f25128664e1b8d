from rest_framework import serializers

from jobs.models import JobKind, JobStatus


class JobOut(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=JobKind.choices)
    status = serializers.ChoiceField(choices=JobStatus.choices)
    done = serializers.IntegerField(help_text="Items examined so far.")
    total = serializers.IntegerField(allow_null=True, help_text="Items to examine; null until counted.")
    percent = serializers.IntegerField(allow_null=True, help_text="0-100 (100 once succeeded); null while the "
                                                                  "total is unknown.")
    result = serializers.DictField(child=serializers.IntegerField(), allow_null=True,
                                   help_text="What the work changed, once it succeeded: `eventsPriced` for a cost "
                                             "backfill or reprice, `assigned` for a rules sweep.")
    error = serializers.CharField(allow_null=True, help_text="Why it failed; null unless `status` is failed.")
    createdAt = serializers.DateTimeField(source="created_at")
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    def to_representation(self, job):
        data = super().to_representation(job)
        data["error"] = job.error or None
        return data
