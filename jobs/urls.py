from django.urls import path

from jobs import views

urlpatterns = [
    path("jobs/<str:job_id>", views.JobDetailApi.as_view()),
]
