from django.urls import path

from matters import views

urlpatterns = [
    path("matters", views.MatterListCreateApi.as_view()),
    # Fixed paths before the id route.
    path("matters/unassigned", views.UnassignedEventListApi.as_view()),
    path("matters/assign", views.MatterAssignApi.as_view()),
    path("matters/audit", views.MatterAuditApi.as_view()),
    path("matters/<str:matter_id>", views.MatterDetailApi.as_view()),
    path("matter-rules", views.MatterRuleListCreateApi.as_view()),
    path("matter-rules/apply", views.MatterRulesApplyApi.as_view()),
    path("matter-rules/<str:rule_id>", views.MatterRuleDetailApi.as_view()),
]
